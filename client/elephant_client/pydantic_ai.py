"""Elephant's memory as a pydantic-ai toolset (``pip install elephant-client[pydantic-ai]``).

    from pydantic_ai import Agent
    from elephant_client import AsyncElephant
    from elephant_client.pydantic_ai import memory_toolset

    memory = AsyncElephant("http://memory.internal:7777", api_key="ek_...")
    agent = Agent("openai:gpt-5", toolsets=[memory_toolset(memory, project="atlas")])
    result = await agent.run("Where does Dana live now?")

The tools (search_memory, remember, recall_facts, reflect, close_session) are described
in ``elephant_client._agent_tools``. Arguments the server refuses (a date it cannot read)
are a ``ModelRetry``: the model reads why and may call again, within the toolset's
``max_retries``. Any other refusal (not found, an outage) is a ``ToolFailed``: the model
reads it and carries on without memory; it never ends the run.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import FunctionToolset, ModelRetry, ToolFailed

from elephant_client._agent_tools import error_text, memory_functions
from elephant_client._async import AsyncElephant
from elephant_client._errors import ElephantError, InvalidInput
from elephant_client._sync import Elephant

__all__ = ["memory_toolset"]


def memory_toolset(
    client: AsyncElephant | Elephant,
    *,
    project: str | None = None,
    source: str = "agent",
    wait: bool = False,
    force: bool = False,
    max_retries: int | None = None,
    id: str | None = None,
) -> FunctionToolset[Any]:
    """The memory tools over ``client`` as one toolset (the async client is preferred; a
    sync one runs its requests in a worker thread).

    ``project``: the project close_session writes its handoff to (None: the model names
    it). ``source``: the source of the notes remember stores. ``wait``: remember returns
    once the note's facts are extracted, so recall_facts lists them at once. ``force``:
    remember stores every note, bypassing the admission gate. ``max_retries``: refused
    arguments each tool may retry in a run (None: the agent's default). ``id``: the
    toolset's id (durable execution needs one).
    """
    functions = memory_functions(
        client, project=project, source=source, wait=wait, force=force, refuse=_refusal
    )
    return FunctionToolset(
        functions,
        max_retries=max_retries,
        docstring_format="google",
        require_parameter_descriptions=True,
        id=id,
    )


def _refusal(exc: ElephantError) -> Exception:
    """Refused arguments: a retry the model can fix; any other refusal: a failed call."""
    if isinstance(exc, InvalidInput):
        return ModelRetry(error_text(exc))
    return ToolFailed(error_text(exc))

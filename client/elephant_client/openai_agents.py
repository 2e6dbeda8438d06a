"""Elephant's memory as tools of the OpenAI Agents SDK: ``elephant-client[openai-agents]``.

    from agents import Agent, Runner
    from elephant_client import AsyncElephant
    from elephant_client.openai_agents import memory_tools

    memory = AsyncElephant("http://memory.internal:7777", api_key="ek_...")
    agent = Agent(name="assistant", tools=memory_tools(memory, project="atlas"))
    result = await Runner.run(agent, "Where does Dana live now?")

The tools (search_memory, remember, recall_facts, reflect, close_session) are described
in ``elephant_client._agent_tools``. A call the server refuses (a date it cannot read, an
outage) comes back to the model as the tool's result, saying what went wrong; the run
goes on.
"""

from __future__ import annotations

from typing import Any

from agents import (
    FunctionTool,
    ModelBehaviorError,
    RunContextWrapper,
    default_tool_error_function,
    function_tool,
)

from elephant_client._agent_tools import error_text, memory_functions
from elephant_client._async import AsyncElephant
from elephant_client._errors import ElephantError
from elephant_client._sync import Elephant

__all__ = ["memory_tools"]


def memory_tools(
    client: AsyncElephant | Elephant,
    *,
    project: str | None = None,
    source: str = "agent",
    wait: bool = False,
    force: bool = False,
) -> list[FunctionTool]:
    """The memory tools over ``client`` (the async client is preferred; a sync one runs its
    requests in a worker thread).

    ``project``: the project close_session writes its handoff to (None: the model names
    it). ``source``: the source of the notes remember stores. ``wait``: remember returns
    once the note's facts are extracted, so recall_facts lists them at once. ``force``:
    remember stores every note, bypassing the admission gate.
    """
    functions = memory_functions(client, project=project, source=source, wait=wait, force=force)
    return [
        function_tool(fn, docstring_style="google", failure_error_function=_tool_error)
        for fn in functions
    ]


def _tool_error(context: RunContextWrapper[Any], error: Exception) -> str:
    """The tool result the model reads when a memory tool fails: the server's refusal said
    plainly, or the SDK's word on arguments that do not fit the tool's schema; anything
    else (a bug) gets the SDK's generic message, which reveals nothing."""
    if isinstance(error, ElephantError):
        return error_text(error)
    if isinstance(error, ModelBehaviorError):
        return f"{error.message}. Fix the arguments and call again."
    return default_tool_error_function(context, error)

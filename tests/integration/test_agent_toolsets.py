"""The memory tools of the agent SDKs (elephant_client.openai_agents, elephant_client.pydantic_ai)
in real agent runs of each SDK, driven by a scripted model (no network), against the real API
served by uvicorn on 127.0.0.1 over the real database and model (no LLM: offline extraction,
offline handoffs, reflect without an answer).

Every scenario runs once per SDK: the script says which tools the model calls with which
arguments; the assertions read what each tool answered, as the model received it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as OpenAIAgent
from agents import ModelResponse, RunConfig, Runner, Usage
from agents.models.interface import Model, ModelTracing
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import (
    ModelMessage,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.messages import ModelResponse as PydanticResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from elephant_client import NO_RETRY, AsyncElephant, Elephant
from elephant_client.openai_agents import memory_tools
from elephant_client.pydantic_ai import memory_toolset
from tests.conftest import free_port, operator_key
from tests.integration.test_client import served

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["search_memory", "remember", "recall_facts", "reflect", "close_session"]
FINAL = "Done."

ToolCall = tuple[str, str, dict[str, Any]]  # call id, tool, arguments
Script = Sequence[list[ToolCall] | str]  # one step per model call: tool calls, or the answer


@dataclass
class Run:
    """What an agent run produced: its output, what each tool call answered (by call id,
    as the model read it), and the tools the model was offered."""

    output: str
    results: dict[str, str] = field(default_factory=dict)
    offered: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Memory:
    """Where the tools' client points: the server, a key, this test's own tenant."""

    url: str
    key: str
    tenant: str

    def client(self, *, sync: bool = False) -> AsyncElephant | Elephant:
        if sync:
            return Elephant(self.url, api_key=self.key, tenant=self.tenant, retry=NO_RETRY)
        return AsyncElephant(self.url, api_key=self.key, tenant=self.tenant, retry=NO_RETRY)


# ------------------------------------------------------------------ OpenAI Agents SDK


class ScriptedModel(Model):
    """An Agents SDK model that answers each call with the script's next step and records
    the tool outputs it is sent."""

    def __init__(self, script: Script) -> None:
        self.steps = list(script)
        self.run = Run(output="")

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        self.run.offered = [tool.name for tool in tools]
        for item in input if isinstance(input, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                self.run.results[item["call_id"]] = str(item["output"])
        step = self.steps.pop(0)
        if isinstance(step, str):
            text = ResponseOutputText(type="output_text", text=step, annotations=[])
            output: list[Any] = [
                ResponseOutputMessage(
                    type="message", id="msg", role="assistant", status="completed", content=[text]
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{call_id}",
                    call_id=call_id,
                    name=name,
                    arguments=json.dumps(arguments),
                    status="completed",
                )
                for call_id, name, arguments in step
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run agents without streaming")


async def run_openai_agent(
    client: AsyncElephant | Elephant, script: Script, options: dict[str, Any]
) -> Run:
    model = ScriptedModel(script)
    agent = OpenAIAgent(name="assistant", model=model, tools=memory_tools(client, **options))
    result = await Runner.run(
        agent, "Go.", max_turns=len(script) + 1, run_config=RunConfig(tracing_disabled=True)
    )
    assert not model.steps, "the run ended before the script did"
    model.run.output = str(result.final_output)
    return model.run


# ------------------------------------------------------------------ pydantic-ai


async def run_pydantic_agent(
    client: AsyncElephant | Elephant, script: Script, options: dict[str, Any]
) -> Run:
    steps = list(script)
    run = Run(output="")

    def respond(messages: list[ModelMessage], info: AgentInfo) -> PydanticResponse:
        run.offered = [tool.name for tool in info.function_tools]
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):
                run.results[part.tool_call_id] = part.model_response_str()
            elif isinstance(part, RetryPromptPart) and part.tool_call_id:
                run.results[part.tool_call_id] = part.model_response()
        step = steps.pop(0)
        if isinstance(step, str):
            return PydanticResponse(parts=[TextPart(step)])
        return PydanticResponse(
            parts=[ToolCallPart(name, arguments, tool_call_id=cid) for cid, name, arguments in step]
        )

    agent = PydanticAgent(FunctionModel(respond), toolsets=[memory_toolset(client, **options)])
    result = await agent.run("Go.")
    assert not steps, "the run ended before the script did"
    run.output = result.output
    return run


RUNNERS = {"openai-agents": run_openai_agent, "pydantic-ai": run_pydantic_agent}


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def url(settings: Settings, db: Database, embedder: Embedder) -> Iterator[str]:
    with served(settings, db, embedder) as base:
        yield base


@pytest.fixture(scope="module")
def key(db: Database) -> str:
    return operator_key(db, "agent toolsets")


@pytest.fixture(params=sorted(RUNNERS))
def sdk(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def memory(url: str, key: str) -> Memory:
    """A tenant of its own per test (and per SDK): each run starts from empty memory."""
    return Memory(url, key, f"agents_{uuid.uuid4().hex[:10]}")


def run(sdk: str, memory: Memory, script: Script, *, sync: bool = False, **options: Any) -> Run:
    """One agent run of ``sdk`` with the memory tools (made with ``options``) over a client
    of ``memory`` (``sync``: the blocking one), opened and closed in the run's event loop."""

    async def scenario() -> Run:
        client = memory.client(sync=sync)
        try:
            return await RUNNERS[sdk](client, script, options)
        finally:
            if isinstance(client, AsyncElephant):
                await client.aclose()
            else:
                client.close()

    done = asyncio.run(scenario())
    assert done.output == FINAL  # the run finished with the model's answer
    return done


# ------------------------------------------------------------------ scenarios


def test_a_later_agent_finds_what_an_earlier_one_remembered(sdk: str, memory: Memory) -> None:
    note = "Priya moved the Atlas launch from March 3 to April 14 after the fuel audit."
    first = run(sdk, memory, [[("c1", "remember", {"text": note})], FINAL], sync=True)
    assert first.offered == TOOLS
    stored = first.results["c1"]
    assert stored.startswith("Stored as memory "), stored
    memory_id = stored.removeprefix("Stored as memory ").split(";")[0].rstrip(".")

    again = run(sdk, memory, [[("c1", "remember", {"text": note})], FINAL])
    assert again.results["c1"] == f"Already in memory: the same note is memory {memory_id}."

    later = run(
        sdk,
        memory,
        [[("c2", "search_memory", {"query": "When is the Atlas launch?", "limit": 5})], FINAL],
    )
    found = later.results["c2"]
    assert found.startswith("1 memory matches 'When is the Atlas launch?', best first:\n[1] ")
    assert f"[1] id={memory_id} note " in found and "source=agent" in found
    assert note in found

    with memory.client(sync=True) as client:
        assert isinstance(client, Elephant)
        record = client.get_memory(memory_id)
        assert (record.text, record.source) == (note, "agent")


def test_recall_facts_as_of_a_date_before_and_after_a_change(sdk: str, memory: Memory) -> None:
    script: Script = [
        [
            (
                "c1",
                "remember",
                {
                    "text": "Dana lives in Berlin and works at Atlas Labs.",
                    "occurred_at": "2024-01-10",
                },
            )
        ],
        [
            (
                "c2",
                "remember",
                {
                    "text": "Dana moved to Lisbon and works at Orion Labs.",
                    "occurred_at": "2025-02-01",
                },
            )
        ],
        [  # three calls at once
            ("c3", "recall_facts", {"as_of": "2024-06-01", "subject": "Dana"}),
            ("c4", "recall_facts", {"as_of": "2025-06-01T12:00:00Z", "subject": "dana"}),
            ("c5", "recall_facts", {}),
        ],
        [("c6", "recall_facts", {"as_of": "2023-01-01"})],
        FINAL,
    ]
    done = run(sdk, memory, script, wait=True)
    assert done.results["c1"].endswith("; 1 fact extracted."), done.results["c1"]

    before = done.results["c3"]
    assert before.startswith("1 fact about Dana true as of 2024-06-01, newest first:")
    assert "subject=Dana valid 2024-01-10 to 2025-02-01 (superseded): Dana lives in Berlin" in (
        before
    )
    assert "Lisbon" not in before

    after = done.results["c4"]
    assert "valid since 2025-02-01: Dana moved to Lisbon and works at Orion Labs" in after
    assert "Berlin" not in after
    now = done.results["c5"]
    assert (
        now.startswith("1 fact true now, newest first:") and "Lisbon" in now and "Berlin" not in now
    )
    assert done.results["c6"] == "No facts true as of 2023-01-01."


def test_reflect_without_an_llm_returns_the_sources(sdk: str, memory: Memory) -> None:
    note = "The Orion rover uses wheel set 7 since the March field test."
    script: Script = [
        [("c1", "remember", {"text": note})],
        [("c2", "reflect", {"question": "Which wheel set does the Orion rover use?"})],
        FINAL,
    ]
    done = run(sdk, memory, script, force=True)
    memory_id = done.results["c1"].removeprefix("Stored as memory ").split(";")[0].rstrip(".")
    reply = done.results["c2"]
    assert reply.startswith("No answer was written (no LLM configured"), reply
    assert "Answer from these sources, citing them:" in reply
    assert f"] id={memory_id} note " in reply and note in reply


def test_close_session_writes_the_handoff(sdk: str, memory: Memory) -> None:
    transcript = "user: We chose the titanium valve.\nassistant: Next, test it on Monday."
    fixed = run(
        sdk,
        memory,
        [[("c1", "close_session", {"transcript": transcript})], FINAL],
        project="rocket",
    )
    assert fixed.results["c1"].startswith("Session stored as conversation ")
    handoff = fixed.results["c1"].splitlines()
    assert "(2 turns, " in handoff[0] and handoff[0].endswith("Handoff for project 'rocket':")
    assert handoff[1].startswith("Summary: Session on rocket")
    assert handoff[2:] == [
        "Decisions:",
        "- We chose the titanium valve.",
        "Open questions: none",
        "Next steps:",
        "- Next, test it on Monday.",
    ]

    named = run(  # no project given to the tools: the model names it
        sdk,
        memory,
        [[("c1", "close_session", {"transcript": transcript, "project": "valve"})], FINAL],
    )
    assert "Handoff for project 'valve':" in named.results["c1"]
    with memory.client(sync=True) as client:
        assert isinstance(client, Elephant)
        assert client.handoff("rocket").decisions == ["We chose the titanium valve."]
        assert client.handoff("valve").next_steps == ["Next, test it on Monday."]


def test_refusals_reach_the_model_and_the_run_goes_on(sdk: str, memory: Memory) -> None:
    script: Script = [
        [
            ("c1", "recall_facts", {"as_of": "the day after the launch"}),
            ("c2", "search_memory", {"query": "launch", "limit": 0}),
        ],
        [("c3", "remember", {"text": "Dana's birthday is on June 4.", "occurred_at": "soon"})],
        FINAL,
    ]
    done = run(sdk, memory, script)
    for call in ("c1", "c2", "c3"):
        assert "Memory refused the arguments: " in done.results[call], done.results[call]
        assert "Fix them and call again." in done.results[call]
    assert "as_of: " in done.results["c1"]
    assert "limit" in done.results["c2"]
    assert "occurred_at" in done.results["c3"]


def test_an_unreachable_server_is_a_tool_failure_not_a_crash(sdk: str) -> None:
    nobody = Memory(f"http://127.0.0.1:{free_port()}", "ek_unused", "agents_down")
    script: Script = [[("c1", "search_memory", {"query": "launch"})], FINAL]
    done = run(sdk, nobody, script)
    assert "Memory is unavailable (connection_failed: " in done.results["c1"], done.results
    assert "Continue without it for now." in done.results["c1"]


def test_arguments_outside_the_schema_are_refused_by_the_sdk(sdk: str, memory: Memory) -> None:
    script: Script = [[("c1", "search_memory", {"limit": 3})], FINAL]  # no query
    done = run(sdk, memory, script)
    assert "query" in done.results["c1"] or "Invalid JSON input" in done.results["c1"]


# ------------------------------------------------------------------ the docs


def test_the_docs_name_every_tool_and_option_and_their_examples_import() -> None:
    page = (ROOT / "docs" / "agent-sdks.md").read_text()
    for name in TOOLS:
        assert f"| `{name}` |" in page, name
    options = set(inspect.signature(memory_tools).parameters) - {"client"}
    for option in options:
        assert f"| `{option}` |" in page, option
    extra = set(inspect.signature(memory_toolset).parameters) - options - {"client"}
    assert extra == {"max_retries", "id"}
    assert all(f"`{option}`" in page for option in extra)

    examples = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    assert len(examples) == 2
    for example in examples:  # imports and defines main; asyncio.run would reach a model
        code, run_line = example.rstrip().rsplit("\n", 1)
        assert run_line == "asyncio.run(main())"
        namespace: dict[str, Any] = {}
        exec(compile(code, "docs/agent-sdks.md", "exec"), namespace)  # noqa: S102
        assert inspect.iscoroutinefunction(namespace["main"])

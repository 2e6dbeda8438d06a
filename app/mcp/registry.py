"""The tool registry: each tool is one function plus a word saying what kind of tool it is.

A tool set (``MEMORY`` in tools.py, ``GRAPH_TOOLS`` in graph_tools.py) collects its
tools with ``@toolset.tool(kind)``; a tool is named after its function. The kind
decides the profiles that offer the tool, its MCP annotations and, with API keys,
the scope a key needs to see and call it (``SCOPE_OF_KIND`` in server.py):

| kind   | profiles               | readOnlyHint | destructiveHint | idempotentHint | scope |
| ------ | ---------------------- | ------------ | --------------- | -------------- | ----- |
| read   | recall, standard, full | true         | false           | true           | read  |
| write  | record, standard, full | false        | false           | per tool       | write |
| delete | full                   | false        | true            | true           | admin |

openWorldHint is always false (the tools reach the memory store only). A tool
outside the active profile is never registered with the server, so it is neither
listed nor callable; the service function behind it stays available to the API and
the CLI. To add a tool, decorate its function in the tool set it belongs to (a write
that can be repeated safely says ``idempotent=True``); a new tool set goes into
``toolsets()`` in server.py.

A tool returns its typed result. fastmcp serialises a TypedDict or a dataclass itself;
a tool set whose results it cannot (the graph's msgspec Structs) gives ``answer``, the
function turning a result into the JSON object the client reads, and the server
registers each tool through it (``ToolSpec.handler``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from mcp.types import ToolAnnotations

from app.protocol import JSONObject

Kind = Literal["read", "write", "delete"]
Profile = Literal["recall", "record", "standard", "full"]
PROFILE_NAMES: tuple[Profile, ...] = get_args(Profile)

PROFILES: dict[Profile, frozenset[Kind]] = {
    "recall": frozenset({"read"}),
    "record": frozenset({"write"}),
    "standard": frozenset({"read", "write"}),
    "full": frozenset({"read", "write", "delete"}),
}

F = TypeVar("F", bound=Callable[..., Any])
Answer = Callable[[Any], JSONObject]
"""A tool set's typed result to the JSON object a tool answers with."""


@dataclass(frozen=True)
class ToolSpec:
    fn: Callable[..., Any]
    kind: Kind
    idempotent: bool = False
    answer: Answer | None = None

    @property
    def name(self) -> str:
        return self.fn.__name__

    def handler(self) -> Callable[..., Any]:
        """What the server registers: ``fn``, or with an ``answer`` a function calling
        ``fn`` and answering with the JSON of its result (its signature says so to
        fastmcp, which then passes that object through as it is)."""
        if self.answer is None:
            return self.fn
        fn, answer = self.fn, self.answer

        @functools.wraps(fn)
        def answered(*args: Any, **kwargs: Any) -> JSONObject:
            return answer(fn(*args, **kwargs))

        signature = inspect.signature(fn, eval_str=True)
        answered.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=JSONObject
        )
        return answered

    def offered_in(self, profile: Profile) -> bool:
        return self.kind in PROFILES[profile]

    def annotations(self) -> ToolAnnotations:
        read_only = self.kind == "read"
        return ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=self.kind == "delete",
            idempotent_hint=read_only or self.kind == "delete" or self.idempotent,
            open_world_hint=False,  # the memory store only, never the outside world
        )


@dataclass
class ToolSet:
    """A group of tools (memory, graph, ...), each declared with ``@toolset.tool(kind)``."""

    answer: Answer | None = None
    specs: list[ToolSpec] = field(default_factory=list)

    def tool(self, kind: Kind, *, idempotent: bool = False) -> Callable[[F], F]:
        """Declare a tool; ``idempotent`` only matters for writes (reads and deletes are)."""

        def register(fn: F) -> F:
            if any(spec.name == fn.__name__ for spec in self.specs):
                raise ValueError(f"tool {fn.__name__!r} is declared twice")
            self.specs.append(ToolSpec(fn, kind, idempotent, self.answer))
            return fn

        return register

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.specs)

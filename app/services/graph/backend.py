"""Which graph backend serves this process: decided once, from the settings and the server.

``graph.backend``: ``age`` (Apache AGE), ``relational`` (ordinary tables,
migration 0008) or ``auto`` (AGE when the server has it, else relational).
``graph.enabled = false`` means no graph at all. Every caller (graph
operations and reads, ingest linking, the search lane, stats, health) asks
this one decision; erasure also reaches every backend that may hold a
tenant's rows (``present``), whichever is in use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.config import GraphSettings
from app.db.capabilities import Capabilities
from app.db.runtime import Database
from app.services.graph.age import AGEGraphStore
from app.services.graph.relational import RelationalGraphStore
from app.services.graph.store import GraphStore

Backend = Literal["age", "relational"]

NO_AGE = (
    "graph.backend is age, but this Postgres does not have the Apache AGE extension: "
    "install AGE (https://age.apache.org) and run `elephant migrate`, or set graph.backend "
    "to relational or auto (ELEPHANT_GRAPH_BACKEND) to keep the graph in ordinary tables"
)
DISABLED = "the knowledge graph is disabled: set graph.enabled = true (ELEPHANT_GRAPH_ENABLED)"


@dataclass(frozen=True, slots=True)
class GraphDecision:
    """The backend in use, or None with the reason a graph call gives (a 503)."""

    backend: Backend | None
    reason: str


def decide(settings: GraphSettings, capabilities: Capabilities | None) -> GraphDecision:
    """Needs the detected capabilities (``Database.open``) unless the choice is explicit."""
    if not settings.enabled:
        return GraphDecision(None, DISABLED)
    has_age = capabilities is not None and capabilities.age
    if settings.backend == "relational":
        return GraphDecision("relational", "graph.backend is relational")
    if settings.backend == "age":
        if capabilities is not None and not has_age:
            return GraphDecision(None, NO_AGE)
        return GraphDecision("age", "graph.backend is age")
    if capabilities is None:
        raise ValueError("graph.backend auto needs the server's capabilities: open the database")
    if has_age:
        return GraphDecision("age", "auto: the server has Apache AGE")
    return GraphDecision("relational", "auto: the server has no Apache AGE")


def build(backend: Backend, db: Database) -> GraphStore:
    return AGEGraphStore(db) if backend == "age" else RelationalGraphStore()


def present(capabilities: Capabilities | None) -> tuple[Backend, ...]:
    """Backends that may hold graph rows on this server: the tables always exist (a
    migration), AGE graphs only where AGE is installed."""
    has_age = capabilities is not None and capabilities.age
    return ("age", "relational") if has_age else ("relational",)

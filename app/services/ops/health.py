"""Health: is the database reachable, what it runs, and does the schema fit this build."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from app import __version__
from app.db import Database
from app.errors import ElephantError
from app.services.graph.backend import decide

HealthStatus = Literal["ok", "degraded", "unavailable"]


class ExtensionState(msgspec.Struct, frozen=True, kw_only=True):
    """An extension's installed version, or why it is not in use."""

    installed: bool
    version: str | UnsetType = UNSET
    available_version: str | UnsetType = UNSET
    note: str | UnsetType = UNSET


class KeywordIndexReport(msgspec.Struct, frozen=True, kw_only=True):
    """The BM25 probe: each index must find sampled rows by a word of their own."""

    trusted: bool
    checked_at: str | None
    indexes: dict[str, str]  # index -> what its probe found
    rebuilt_at_start: list[str]
    repairing: bool
    error: str | UnsetType = UNSET


class DatabaseReport(msgspec.Struct, frozen=True, kw_only=True):
    """``error`` when unreachable; everything after it only when reachable."""

    mode: str
    reachable: bool
    error: str | UnsetType = UNSET
    latency_ms: float | UnsetType = UNSET
    server_version: str | UnsetType = UNSET
    database: str | UnsetType = UNSET
    role: str | UnsetType = UNSET
    extensions: dict[str, ExtensionState] | UnsetType = UNSET
    keyword_search: Literal["bm25", "tsvector"] | UnsetType = UNSET
    keyword_index: KeywordIndexReport | UnsetType = UNSET
    # Neither AGE nor pg_textsearch in use: the managed-Postgres mode (pgvector only).
    managed: bool | UnsetType = UNSET
    graph: Literal["age", "relational", "disabled", "unavailable"] | UnsetType = UNSET


@dataclass(frozen=True, slots=True)
class SchemaReport:
    revision: str | None
    head: str
    up_to_date: bool


class EmbeddingReport(msgspec.Struct, frozen=True, kw_only=True):
    """The configured model; what the database was initialised with once it is reachable."""

    provider: str
    model: str
    dim: int
    db_model: str | UnsetType | None = UNSET
    db_dim: int | UnsetType | None = UNSET
    dim_matches: bool | UnsetType = UNSET


class HealthReport(msgspec.Struct, frozen=True, kw_only=True):
    """``schema`` only when the database answered."""

    status: HealthStatus
    version: str
    database: DatabaseReport
    embedding: EmbeddingReport
    schema: SchemaReport | UnsetType = UNSET


def health(db: Database) -> HealthReport:
    """A report for operators; ``status`` is ok, degraded (schema/model drift) or unavailable."""
    settings = db.settings
    embedding = EmbeddingReport(
        provider=settings.embedding.provider,
        model=settings.embedding.model,
        dim=settings.embedding.dim,
    )
    started = time.perf_counter()
    try:
        with db.connection() as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'), current_database(), current_user"
            ).fetchone()
            assert row is not None
            schema = db.schema_info(conn)
            conn.rollback()
    except ElephantError as exc:
        return HealthReport(
            status="unavailable",
            version=__version__,
            database=DatabaseReport(mode=db.mode, reachable=False, error=exc.message),
            embedding=embedding,
        )
    capabilities = db.capabilities
    bm25 = _keyword_index(db) if capabilities and capabilities.textsearch else None
    database = DatabaseReport(
        mode=db.mode,
        reachable=True,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
        server_version=row[0],
        database=row[1],
        role=row[2],
        extensions=msgspec.convert(
            capabilities.report(settings.database.optional_extensions) if capabilities else {},
            dict[str, ExtensionState],
        ),
        keyword_search="bm25" if bm25 and bm25.trusted else "tsvector",
        keyword_index=UNSET if bm25 is None else bm25,
        managed=capabilities.managed if capabilities else UNSET,
        graph=_graph_backend(db),
    )
    mismatched = schema.embedding_dim != settings.embedding.dim
    untrusted = bm25 is not None and not bm25.trusted
    return HealthReport(
        status="degraded" if mismatched or not schema.up_to_date or untrusted else "ok",
        version=__version__,
        database=database,
        embedding=msgspec.structs.replace(
            embedding,
            db_model=schema.embedding_model,
            db_dim=schema.embedding_dim,
            dim_matches=not mismatched,
        ),
        schema=SchemaReport(
            revision=schema.revision, head=schema.head, up_to_date=schema.up_to_date
        ),
    )


def _graph_backend(db: Database) -> Literal["age", "relational", "disabled", "unavailable"]:
    """The backend the graph uses (the decision app/services/graph/backend.py makes for the
    runtime, from the same settings and capabilities), or why there is none."""
    if not db.settings.graph.enabled:
        return "disabled"
    if db.capabilities is None:
        return "unavailable"
    return decide(db.settings.graph, db.capabilities).backend or "unavailable"


def _keyword_index(db: Database) -> KeywordIndexReport:
    """The BM25 probe (app/db/keyword_index.py), run again when older than
    search.keyword_probe_seconds; a failure switches search to tsvector and rebuilds."""
    state = db.keyword.check(max_age_s=db.settings.search.keyword_probe_seconds)
    return KeywordIndexReport(
        trusted=state.trusted,
        checked_at=None if state.checked_at is None else state.checked_at.isoformat(),
        indexes={p.index: ("ok: " if p.ok else "FAILED: ") + p.reason for p in state.probes},
        rebuilt_at_start=state.rebuilt,
        repairing=state.repairing,
        error=UNSET if state.error is None else state.error,
    )

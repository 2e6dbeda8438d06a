"""Doctor: every check an operator would run by hand, each ok / warn / fail with what to do.

`/health` answers "is it up"; the doctor answers "is anything quietly wrong":
schema or embedding drift, a model that no longer produces the recorded
dimension, jobs that failed or hang, rows waiting for a vector, missing
extensions, an unreachable reranker. Counts span every tenant (the migrator
connection); the app role could only see one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import psycopg
from msgspec import UnsetType

from app.config import Settings
from app.db import tenant_indexes
from app.db.capabilities import NOT_WANTED
from app.db.resources import load_sql
from app.errors import ElephantError
from app.providers.embedder import LocalEmbedder
from app.services.jobs import queue
from app.services.lifecycle.maintenance import state as maintenance_state
from app.services.ops import reembed, server_link
from app.services.ops.health import SchemaReport, health
from app.services.runtime import Elephant

Level = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    level: Level
    detail: str


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The worst level of any check, and every check in the order they ran."""

    status: Level
    checks: list[Check]


def worst(levels: list[Level]) -> Level:
    """The worst of some levels: fail over warn over ok."""
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "ok"


def check_api(settings: Settings) -> Check:
    """Is the API of this data dir up: does the ``elephant serve`` its server.json names
    answer /health with a reachable database? Asked before the doctor opens the database
    itself (which starts a stopped embedded server), so it reads the API's own state.
    No server at all fails too: the doctor's exit code says whether the service is
    healthy (``elephant doctor --database-only`` checks the database alone)."""
    link = server_link.running(settings)
    if link is None:
        return Check(
            "api", "fail", f"not running: no elephant serve on the data dir {settings.data_dir} "
            "(start it: elephant serve; or check the database alone: elephant doctor "
            "--database-only)",
        )  # fmt: skip
    where = f"{link.url} (pid {link.pid})"
    try:
        status, answer = server_link.health(link)
    except OSError as exc:
        return Check("api", "fail", f"down: {where} does not answer /health: {exc}")
    report = answer if isinstance(answer, dict) else {}
    state = report.get("status")
    if status != 200 or state not in ("ok", "degraded"):
        database = report.get("database")
        why = database.get("error") if isinstance(database, dict) else None
        return Check(
            "api", "fail", f"down: {where} answers /health with {status} ({state or 'no status'})"
            + (f": {why}" if why else ""),
        )  # fmt: skip
    if state == "degraded":
        return Check("api", "warn", f"{where} answers /health: degraded (see GET /health)")
    return Check("api", "ok", f"{where} answers /health: ok")


def diagnose(elephant: Elephant) -> Diagnosis:
    checks = [
        *_database(elephant),
        _embedder(elephant),
        _server(elephant),
        _reembed(elephant),
        *_rows(elephant),
        *_access(elephant),
        _reranker(elephant),
        _maintenance(elephant),
        _tenant_vectors(elephant),
    ]
    return Diagnosis(status=worst([check.level for check in checks]), checks=checks)


def _database(elephant: Elephant) -> list[Check]:
    report = health(elephant.db)
    database = report.database
    schema = report.schema
    if not database.reachable or not isinstance(schema, SchemaReport):
        error = database.error
        return [Check("database", "fail", "unreachable" if isinstance(error, UnsetType) else error)]
    checks = [Check("database", "ok", f"{database.server_version} ({report.version})")]
    checks.append(
        Check("schema", "ok", f"at {schema.revision}")
        if schema.up_to_date
        else Check(
            "schema", "fail", f"at {schema.revision}, head is {schema.head}: run "
            "`elephant migrate`",
        )
    )  # fmt: skip
    embedding = report.embedding
    checks.append(
        Check("embedding dimension", "ok", f"{embedding.dim} as recorded")
        if embedding.dim_matches
        else Check(
            "embedding dimension", "fail",
            f"configured {embedding.dim} but the database was initialised with "
            f"{embedding.db_dim} ({embedding.db_model}): configure that model, or use "
            "a new database",
        )
    )  # fmt: skip
    extensions = {} if isinstance(database.extensions, UnsetType) else database.extensions
    wanted = elephant.settings.database.optional_extensions
    graph = "unknown" if isinstance(database.graph, UnsetType) else database.graph
    for name, purpose, instead in (
        ("age", "knowledge graph on AGE", f"knowledge graph: {graph}"),
        ("pg_textsearch", "BM25 keyword lane", "the keyword lane ranks with tsvector"),
    ):
        state = extensions.get(name)
        if state is not None and state.installed:
            version = None if isinstance(state.version, UnsetType) else state.version
            checks.append(Check(name, "ok", f"{version} installed"))
        elif name not in wanted:  # left out on purpose: the managed-Postgres mode
            checks.append(Check(name, "ok", f"{NOT_WANTED}: {instead}"))
        else:
            note = "" if state is None or isinstance(state.note, UnsetType) else state.note
            checks.append(Check(name, "warn", f"not installed, so no {purpose}: {note}"))
    if elephant.db.capabilities is not None and elephant.db.capabilities.textsearch:
        checks.append(_keyword_index(elephant))
    checks.append(_cache(elephant))
    return checks


def _keyword_index(elephant: Elephant) -> Check:
    """Probe the BM25 indexes now. Where this process repairs (alone on the database), a
    failure is rebuilt before the report is made; beside a server it is only reported
    (app/db/keyword_index.py: the server repairs)."""
    guard = elephant.db.keyword
    state = guard.check(max_age_s=0)
    if state.repairing:
        guard.wait_for_repair()
        broken = "; ".join(f"{p.index}: {p.reason}" for p in state.probes if not p.ok)
        state = guard.check(max_age_s=0)
        if state.trusted:
            return Check("bm25 index", "warn", f"was missing rows ({broken}): rebuilt, now ok")
    if state.error and not state.probes:
        return Check("bm25 index", "warn", f"not probed: {state.error}")
    found = ", ".join(
        f"{p.index} {p.found}/{p.sampled} sampled rows ({p.documents} documents)"
        for p in state.probes
    )
    if not state.trusted and state.probes and all(p.ok for p in state.probes):
        # Beside a server (``report``): every probe passes but the rebuild of this server
        # start is not recorded yet; the serving process does it at its start.
        return Check("bm25 index", "warn", f"{found}; {state.error or 'not rebuilt yet'}")
    if not state.trusted:
        return Check(
            "bm25 index", "fail", f"{found}: search uses the tsvector lane ({state.error or ''})"
        )
    rebuilt = f"; rebuilt at start ({state.rebuilt_because})" if state.rebuilt else ""
    return Check("bm25 index", "ok", f"finds what the tables hold: {found}{rebuilt}")


def _tenant_vectors(elephant: Elephant) -> Check:
    """How each tenant's vector lanes are served (app/db/tenant_indexes.py), the biggest
    named; a failed index build or counts the keeper has not caught up with warn."""
    threshold = elephant.settings.search.tenant_index_rows
    try:
        with elephant.db.admin_connection() as conn:
            recorded = tenant_indexes.ways(conn)
            indexes = tenant_indexes.existing_indexes(conn)
    except (ElephantError, psycopg.Error) as exc:
        return Check("tenant vectors", "warn", f"cannot read how tenants are served: {exc}")
    counts = {"exact": 0, "own": 0, "shared": 0}
    for way in recorded:
        counts[way.way] += 1
    big = [w for w in recorded if w.way != "exact"][:5]
    named = ", ".join(f"{w.tenant} {w.way} ({w.vector_rows:,} rows)" for w in big)
    detail = (
        f"{counts['exact']} exact (< {threshold:,} rows), {counts['own']} with their own "
        f"HNSW indexes, {counts['shared']} on the shared graphs" + (f"; {named}" if named else "")
    )
    invalid = sorted(name for name, valid in indexes.items() if not valid)
    if invalid:
        return Check(
            "tenant vectors",
            "warn",
            f"{detail}; failed index builds {invalid}: the keeper builds them again "
            "(or run `elephant maintain tenant-indexes`)",
        )
    every = elephant.settings.search.tenant_index_check_s
    counted = [w.counted_at for w in recorded if w.counted_at is not None]
    if every > 0 and counted:
        age = (datetime.now(UTC) - max(counted)).total_seconds()
        if age > max(3 * every, 3600):
            return Check(
                "tenant vectors",
                "warn",
                f"{detail}; last counted {age / 3600:.1f} h ago (every {every:g} s wanted): "
                "is a worker running? `elephant maintain tenant-indexes` counts now",
            )
    return Check("tenant vectors", "ok", detail)


# Share of the search indexes (HNSW, BM25) that shared_buffers should hold at least.
CACHE_SHARE_WANTED = 0.5


def _counts(elephant: Elephant, statement: str) -> list[int]:
    """The one row of ``sql/ops/<statement>``, as whole numbers: counts over the whole
    database, read as the migrator (the app role would see one tenant)."""
    with elephant.db.admin_connection() as conn:
        row = conn.execute(load_sql(f"ops/{statement}")).fetchone()
    assert row is not None
    return [int(value) for value in row]


def _cache(elephant: Elephant) -> Check:
    """shared_buffers against the indexes every search reads (HNSW and BM25)."""
    try:
        row = _counts(elephant, "doctor_cache.sql")
    except (ElephantError, psycopg.Error) as exc:
        return Check("cache", "warn", f"cannot read shared_buffers and index sizes: {exc}")
    buffers, indexes = row
    detail = f"shared_buffers {buffers // 2**20} MB, search indexes {indexes // 2**20} MB"
    if buffers >= CACHE_SHARE_WANTED * indexes:
        return Check("cache", "ok", detail)
    fix = (
        "raise embedded.shared_buffers_mb or embedded.memory_share"
        if elephant.db.embedded is not None
        else "raise shared_buffers on the server (it needs a restart)"
    )
    return Check("cache", "warn", f"{detail}: searches will read indexes from disk; {fix}")


def _embedder(elephant: Elephant) -> Check:
    """A local model not loaded in this process is checked by its files (loading it would
    cost the CLI seconds of CPU); a loaded one, or a remote provider, embeds a probe."""
    embedder = elephant.embedder
    if isinstance(embedder, LocalEmbedder) and not embedder.loaded:
        try:
            return Check("embedder", "ok", embedder.check_files())
        except ElephantError as exc:
            return Check("embedder", "fail", f"cannot load: {exc.message}")
    try:
        vector = elephant.embedder.embed_queries(["doctor probe"])[0]
    except ElephantError as exc:
        return Check("embedder", "fail", f"cannot embed: {exc.message}")
    size = len(vector)
    if size != elephant.settings.embedding.dim:
        return Check(
            "embedder",
            "fail",
            f"{elephant.settings.embedding.model} returns {size} dimensions, embedding.dim is "
            f"{elephant.settings.embedding.dim}",
        )
    return Check("embedder", "ok", f"{elephant.settings.embedding.model}, {size} dimensions")


def _reembed(elephant: Elephant) -> Check:
    """A re-embed's progress (app/services/ops/reembed/), or whether embedding.model names the
    model the vectors are from (after a re-embed the configuration must follow)."""
    try:
        state = reembed.status(elephant)
    except (ElephantError, psycopg.Error) as exc:
        return Check("re-embed", "warn", f"cannot read the re-embed state: {exc}")
    if state.active:
        level: Level = "warn" if state.last_error else "ok"
        return Check("re-embed", level, f"in progress: {state.describe()}")
    configured = elephant.settings.embedding
    if (state.model, state.dim) != (configured.model, configured.dim):
        return Check(  # a dimension mismatch also fails "embedding dimension"
            "re-embed", "warn" if state.dim == configured.dim else "fail",
            f"the vectors are {state.model} ({state.dim}-d) but embedding.model is "
            f"{configured.model} ({configured.dim}-d): set embedding.model and embedding.dim "
            "to the database's (after a re-embed), or re-embed to the configured model",
        )  # fmt: skip
    return Check("re-embed", "ok", f"none in progress; vectors are {state.model}")


def _server(elephant: Elephant) -> Check:
    """Whether CLI commands that embed find a running server to borrow the model from."""
    link = server_link.find(elephant.settings)
    if link is None:
        return Check("server", "ok", "none running here: CLI searches load the model themselves")
    return Check("server", "ok", f"{link.url} (pid {link.pid}): CLI searches use its model")


def _rows(elephant: Elephant) -> list[Check]:
    lease = queue.LEASE_SECONDS  # after this a running job is claimed again
    try:
        failed, stuck, queued, memories, facts, turns = _counts(elephant, "doctor_rows.sql")
    except (ElephantError, psycopg.Error) as exc:
        return [Check("queue", "fail", f"cannot read the queue: {exc}")]
    return [
        _warn_if(
            failed, "failed jobs", f"{failed} failed for good: see GET /jobs?status=failed", "none"
        ),
        _warn_if(
            stuck,
            "stuck jobs",
            f"{stuck} running for over {lease} s: a worker died?",
            f"none ({queued} queued)",
        ),
        _warn_if(
            memories + facts,
            "vectors",
            f"{memories} memories and {facts} facts wait for a vector: the embed_memories job "
            "fills them once the embedder answers (a worker must run)",
            "every memory and fact has one",
        ),
        _warn_if(
            turns,
            "passages",
            f"{turns} turns wait for their passages (search sees only their windows' vectors): "
            "the embed_memories job fills them (a worker must run)",
            "every turn has its passages",
        ),
    ]


def _warn_if(found: int, name: str, warning: str, fine: str) -> Check:
    """A backlog check: ``warning`` when ``found`` counts anything, else ``fine``."""
    return Check(name, "warn", warning) if found else Check(name, "ok", fine)


def _access(elephant: Elephant) -> list[Check]:
    """Can anyone call the API, and is every tenant graph behind row-level security?"""
    try:
        active, open_tables = _counts(elephant, "doctor_access.sql")
    except (ElephantError, psycopg.Error) as exc:
        return [Check("api keys", "fail", f"cannot read the keys: {exc}")]
    if elephant.settings.auth.mode == "local":
        keys = Check("api keys", "ok", "auth.mode local: no keys, loopback only")
    elif active:
        keys = Check("api keys", "ok", f"{active} active")
    else:
        keys = Check(
            "api keys", "warn", "auth.mode keys but no active key, so nobody can call the API: "
            "`elephant keys create --tenant T --scopes read,write`",
        )  # fmt: skip
    graphs = (
        Check("graph isolation", "ok", "every tenant graph table has row-level security")
        if not open_tables
        else Check(
            "graph isolation", "fail", f"{open_tables} graph tables without row-level "
            "security: run `elephant migrate`",
        )
    )  # fmt: skip
    return [keys, graphs]


def _reranker(elephant: Elephant) -> Check:
    if elephant.reranker is None or not elephant.settings.reranker.enabled:
        return Check("reranker", "ok", "off (search keeps the fused order)")
    try:
        elephant.reranker.rerank("doctor probe", ["a probe document"])
    except ElephantError as exc:
        return Check("reranker", "warn", f"{exc.message}: search falls back to the fused order")
    return Check("reranker", "ok", f"answers at {elephant.settings.reranker.url}")


def _maintenance(elephant: Elephant) -> Check:
    """Maintenance jobs (app/services/lifecycle): last run and due tenants per kind; warns
    when one has waited over an hour (no worker running?)."""
    try:
        kinds = maintenance_state(elephant)
    except (ElephantError, psycopg.Error) as exc:
        return Check("maintenance", "warn", f"cannot read the maintenance state: {exc}")
    parts, stalled, failed = [], 0, 0
    for kind in kinds:
        last = "never" if kind.last_run is None else f"last {kind.last_run:%Y-%m-%d %H:%M}"
        every = f"every {kind.every_hours:g} h" if kind.every_hours else "not scheduled"
        jobs = (
            f", {kind.queued} queued, {kind.running} running" if kind.queued + kind.running else ""
        )
        due = f", due for {kind.due} tenants" if kind.due else ""
        parts.append(f"{kind.kind}: {every}, {last}{jobs}{due}")
        stalled += kind.waiting_over_hour
        failed += kind.failed
    detail = "; ".join(parts)
    if stalled:
        return Check("maintenance", "warn", f"{stalled} jobs queued over an hour (is a worker "
                     f"running? `elephant worker`): {detail}")  # fmt: skip
    if failed:  # already a warning of the failed-jobs check
        detail += f"; {failed} failed"
    return Check("maintenance", "ok", detail)

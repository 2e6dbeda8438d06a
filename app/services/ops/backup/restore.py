"""``elephant restore``: a backup file into an empty database, embedded or external.

Refusals come before anything is written: a file that is not a backup, a target that
is not empty, a connection that cannot write through row-level security or create the
missing roles, an extension the target server lacks. Then the missing roles are
created, and pg_restore's script runs through psql in ONE transaction together with
sql/backup/age_graph_oids.sql (AGE's catalog names graphs by schema oids, which the
restore changes): the database is restored whole or not at all, and a failure drops
the roles it created. Afterwards every table's row count is compared with the
manifest, the BM25 indexes are probed (and rebuilt if a probe fails: nothing serves
the new database yet), every index must be valid and every AGE graph must answer
cypher(); the report says what it found.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from app.config import Settings
from app.db import keyword_index, tenant_indexes
from app.db.resources import load_sql
from app.db.runtime import Connection, Database
from app.errors import Conflict, Forbidden
from app.services.ops.backup import archive, pipeline, roles, tools
from app.services.ops.backup.make import check_sees_every_row, count_rows, server_version


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoreReport:
    database: str
    mode: str
    seconds: float
    tools: str
    backup_made_at: str
    schema_revision: str | None
    tables: int
    rows: int
    mismatched: dict[str, list[int]]  # "schema.table" -> [in the backup, restored]
    roles_created: list[str]
    roles_kept: list[str]  # already on the target server, left as they were
    passwords: bool
    graphs: dict[str, int]  # AGE graph -> vertices cypher() reads
    bm25: dict[str, str]  # index -> its probe's finding
    bm25_rebuilt: list[str]
    tenant_indexes: int  # per-tenant vector indexes restored
    invalid_indexes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatched and not self.invalid_indexes


def restore(settings: Settings, path: Path) -> RestoreReport:
    """Restore the backup at ``path`` into the configured (empty) database."""
    started = time.perf_counter()
    db = Database(settings)
    with (
        tempfile.TemporaryDirectory(prefix="elephant-restore-") as work,
        archive.opened(path, Path(work)) as backup,
    ):
        try:
            db.start_server()
            conninfo = db.admin_conninfo()
            with psycopg.connect(conninfo, autocommit=True) as conn:
                chosen, created, kept = _prepare(conn, backup)
                try:
                    _run(chosen, conninfo, backup, Path(work))
                except BaseException:
                    roles.drop(conn, created)
                    raise
                report = _verify(conn, backup, chosen, created, kept, db.mode)
        finally:
            db.close()
    return _timed(report, time.perf_counter() - started)


def _prepare(conn: Connection, backup: archive.Opened) -> tuple[tools.Tools, list[str], list[str]]:
    """Every refusal, then the missing roles (committed: psql runs in its own session)."""
    check_sees_every_row(conn, "restore")
    database = conn.execute("SELECT current_database()").fetchone()
    name = str(database[0]) if database else "?"
    occupied = conn.execute(load_sql("backup/occupied.sql")).fetchone()
    assert occupied is not None
    relations, present = int(occupied[0]), list(occupied[1])
    if relations or present:
        raise Conflict(
            f"database {name} is not empty ({relations} tables, views or sequences; "
            f"extensions: {', '.join(present) or 'none'}): a restore goes into an empty "
            "database only. Point at a new one (embedded.database, a new data dir, or "
            "DATABASE_URL) and restore again; nothing was written"
        )
    _check_extensions(conn, backup.manifest)
    _, major = server_version(conn)
    chosen = tools.choose(major, at_least=backup.manifest.tools_major)
    missing = roles.missing(conn, backup.roles)
    if missing:
        row = conn.execute(
            "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        if row is None or not row[0]:
            raise Forbidden(
                f"the restore must create the roles {', '.join(missing)}: connect as a "
                "superuser or a role with CREATEROLE; nothing was written"
            )
        with conn.transaction():
            roles.create(conn, backup.roles, missing)
    kept = [role.name for role in backup.roles.roles if role.name not in missing]
    return chosen, missing, kept


def _check_extensions(conn: Connection, manifest: archive.Manifest) -> None:
    wanted = sorted(set(manifest.extensions) - {"plpgsql"})
    rows = conn.execute(
        "SELECT name FROM pg_available_extensions WHERE name = ANY(%s)", (wanted,)
    ).fetchall()
    lacking = sorted(set(wanted) - {str(row[0]) for row in rows})
    if lacking:
        raise Conflict(
            f"the target server lacks the extensions {', '.join(lacking)} the backup uses: "
            "install them there (the embedded server has them all); nothing was written"
        )
    if "pg_textsearch" in wanted:
        preload = conn.execute("SHOW shared_preload_libraries").fetchone()
        if preload is None or "pg_textsearch" not in str(preload[0]):
            raise Conflict(
                "the backup has BM25 indexes (pg_textsearch), which the target server can "
                "load only from shared_preload_libraries: add pg_textsearch there and "
                "restart it; nothing was written"
            )


def _run(chosen: tools.Tools, conninfo: str, backup: archive.Opened, work: Path) -> None:
    """pg_restore's script, then the AGE fix, through psql in one transaction."""
    target, env = tools.connection(conninfo)
    after = load_sql("backup/age_graph_oids.sql") if "age" in backup.manifest.extensions else ""
    pipeline.restore(chosen, target, env, backup.dump, after, work)


def _verify(
    conn: Connection,
    backup: archive.Opened,
    chosen: tools.Tools,
    created: list[str],
    kept: list[str],
    mode: str,
) -> RestoreReport:
    """What the restored database holds, checked against the manifest."""
    conn.execute("ANALYZE")
    conn.execute("SET row_security = off")  # counts are an error, never a filtered view
    counts = count_rows(conn)
    wanted = backup.manifest.rows
    mismatched = {
        table: [wanted.get(table, -1), counts.get(table, -1)]
        for table in sorted(set(wanted) | set(counts))
        if wanted.get(table) != counts.get(table)
    }
    bm25, rebuilt = _bm25(conn) if "pg_textsearch" in backup.manifest.extensions else ({}, [])
    invalid = conn.execute(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE NOT indisvalid ORDER BY 1"
    ).fetchall()
    database = conn.execute("SELECT current_database()").fetchone()
    return RestoreReport(
        database=str(database[0]) if database else "?",
        mode=mode,
        seconds=0.0,
        tools=chosen.describe(),
        backup_made_at=backup.manifest.created_at,
        schema_revision=backup.manifest.schema_revision,
        tables=len(counts),
        rows=sum(counts.values()),
        mismatched=mismatched,
        roles_created=created,
        roles_kept=kept,
        passwords=backup.roles.passwords,
        graphs=_graphs(conn) if "age" in backup.manifest.extensions else {},
        bm25=bm25,
        bm25_rebuilt=rebuilt,
        tenant_indexes=len(tenant_indexes.existing_indexes(conn)),
        invalid_indexes=[str(row[0]) for row in invalid],
    )


def _bm25(conn: Connection) -> tuple[dict[str, str], list[str]]:
    """Probe each BM25 index; rebuild the ones that fail (no server uses them yet)."""
    probes = keyword_index.probe(conn)
    failed = [probe.index for probe in probes if not probe.ok]
    if failed:
        keyword_index.rebuild(conn, failed, "probe failed after a restore")
        probes = keyword_index.probe(conn)
    return {probe.index: probe.reason for probe in probes}, failed


def _graphs(conn: Connection) -> dict[str, int]:
    """Each AGE graph's vertices as cypher() reads them: it fails if the catalog is off."""
    conn.execute("LOAD 'age'")
    conn.execute("SET search_path = public, ag_catalog")
    found = {}
    for (name,) in conn.execute("SELECT name FROM ag_catalog.ag_graph ORDER BY 1").fetchall():
        statement = sql.SQL(
            "SELECT count(*) FROM ag_catalog.cypher({}, $$ MATCH (n) RETURN n $$) "
            "AS (n ag_catalog.agtype)"
        ).format(sql.Literal(str(name)))
        row = conn.execute(statement).fetchone()
        found[str(name)] = int(row[0]) if row else 0
    return found


def _timed(report: RestoreReport, seconds: float) -> RestoreReport:
    from dataclasses import replace

    return replace(report, seconds=round(seconds, 2))

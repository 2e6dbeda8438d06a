"""``elephant backup``: the whole database, its roles and its row counts in one file.

One REPEATABLE READ transaction exports its snapshot; pg_dump dumps that snapshot
(``--snapshot``) while the transaction counts every table's rows and reads the roles,
so the manifest describes exactly what the dump holds, even beside a serving server
(which the backup only reads: no lock beyond pg_dump's ACCESS SHARE, no index touched).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from app import __version__
from app.config import Settings
from app.db.resources import load_sql
from app.db.runtime import Connection, Database
from app.errors import Forbidden, InvalidInput
from app.services.ops.backup import archive, roles, tools


@dataclass(frozen=True, slots=True, kw_only=True)
class BackupReport:
    path: str
    bytes: int
    seconds: float
    database: str
    mode: str  # embedded or external
    server_version: str
    tools: str  # which pg_dump ran
    tables: int
    rows: int
    roles: list[str]
    passwords: bool  # analysts' password verifiers included (a superuser made it)


def backup(settings: Settings, out: Path) -> BackupReport:
    """Write the backup of the configured database to ``out`` (a new file)."""
    if out.exists():
        raise InvalidInput(f"{out} exists: name a new file (a backup never overwrites one)")
    if not out.parent.is_dir():
        raise InvalidInput(f"{out.parent} is not a folder")
    started = time.perf_counter()
    db = Database(settings)
    try:
        db.start_server()
        conninfo = db.admin_conninfo()
        with (
            psycopg.connect(conninfo) as conn,
            tempfile.TemporaryDirectory(dir=out.parent, prefix=".elephant-backup-") as work,
        ):
            dump = Path(work) / archive.DUMP
            manifest, role_set, chosen = _dump(conn, conninfo, dump)
            archive.write(out, manifest, role_set, dump)
            conn.rollback()
    finally:
        db.close()
    return BackupReport(
        path=str(out),
        bytes=out.stat().st_size,
        seconds=round(time.perf_counter() - started, 2),
        database=manifest.database,
        mode=db.mode,
        server_version=manifest.server_version,
        tools=chosen.describe(),
        tables=len(manifest.rows),
        rows=sum(manifest.rows.values()),
        roles=[role.name for role in role_set.roles],
        passwords=role_set.passwords,
    )


def _dump(
    conn: Connection, conninfo: str, dump: Path
) -> tuple[archive.Manifest, roles.RoleSet, tools.Tools]:
    """In one snapshot: check the rights, count the rows, read the roles, run pg_dump."""
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    check_sees_every_row(conn, "back up")
    conn.execute("SELECT set_config('row_security', 'off', true)")  # an error, never a filter
    snapshot = _one(conn, "SELECT pg_export_snapshot()")
    version, major = server_version(conn)
    chosen = tools.choose(major)
    manifest = archive.Manifest(
        format=archive.FORMAT,
        created_at=datetime.now(UTC).isoformat(),
        elephant_version=__version__,
        schema_revision=_revision(conn),
        database=str(_one(conn, "SELECT current_database()")),
        server_version=version,
        server_major=major,
        tools_major=chosen.major,
        extensions=extensions(conn),
        rows=count_rows(conn),
    )
    role_set = roles.collect(conn)
    target, env = tools.connection(conninfo)
    command = [str(chosen.path("pg_dump")), "--format=custom", f"--snapshot={snapshot}"]
    command += ["--no-password", f"--file={dump}", f"--dbname={target}"]
    tools.run(command, env, "pg_dump")
    return manifest, role_set, chosen


def check_sees_every_row(conn: Connection, doing: str) -> None:
    """pg_dump and pg_restore must see and write every tenant's rows through FORCE ROW
    LEVEL SECURITY: the connecting role is a superuser or has BYPASSRLS."""
    row = conn.execute(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    assert row is not None
    user, superuser, bypass = row
    if not (superuser or bypass):
        raise Forbidden(
            f"to {doing} the whole database, connect as a superuser or a role with BYPASSRLS "
            f"({user} is neither: row-level security would hide other tenants' rows)"
        )


def server_version(conn: Connection) -> tuple[str, int]:
    version = str(_one(conn, "SHOW server_version"))
    number = int(_one(conn, "SHOW server_version_num"))
    return version, number // 10000


def extensions(conn: Connection) -> dict[str, str]:
    rows = conn.execute("SELECT extname, extversion FROM pg_extension ORDER BY 1").fetchall()
    return {str(name): str(version) for name, version in rows}


def count_rows(conn: Connection) -> dict[str, int]:
    """Every table's rows ("schema.table" -> count), as ``conn`` sees them."""
    counts = {}
    for schema, table in conn.execute(load_sql("backup/tables.sql")).fetchall():
        statement = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table))
        counts[f"{schema}.{table}"] = int(_one(conn, statement))
    return counts


def _revision(conn: Connection) -> str | None:
    if not _one(conn, "SELECT to_regclass('public.alembic_version') IS NOT NULL"):
        return None
    row = conn.execute("SELECT version_num FROM public.alembic_version").fetchone()
    return None if row is None else str(row[0])


def _one(conn: Connection, statement: str | sql.Composed) -> Any:
    row = conn.execute(statement).fetchone()
    assert row is not None
    return row[0]

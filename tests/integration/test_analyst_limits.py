"""Analysts take no lock or resource the server needs, cannot lift their own limits, and
revoking one always works (issue 40, item 2 and attack 4).

Each test connects as the analyst, on the real server, and tries what the issue's attack
did: advisory locks, large objects, pg_notify, temp tables, ALTER ROLE on itself, a new
password, ``SET statement_timeout = 0``. The analyst guard runs as `elephant serve` runs
it (app/services/access/analyst_guard.py), in a thread on the migrator's connection.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from app.db import Database
from app.db import migrate as migrations
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder
from app.services.access import analysts
from app.services.access.analyst_guard import AnalystGuard
from app.services.access.analysts import AnalystIn
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.conftest import api_client, free_port, make_settings

TENANT = "lim-a"
ELEPHANT = str(Path(sys.executable).parent / "elephant")
START_WITHIN_S = 120.0  # `elephant serve` on a loaded 2-core machine (test_startup.py)
GUARD_IDLE_S = 2
# Every advisory-lock function, each form (migration 0018).
ADVISORY_CALLS = [
    f"SELECT pg_{name}({args})"
    for name in (
        "advisory_lock",
        "advisory_lock_shared",
        "try_advisory_lock",
        "try_advisory_lock_shared",
        "advisory_xact_lock",
        "advisory_xact_lock_shared",
        "try_advisory_xact_lock",
        "try_advisory_xact_lock_shared",
        "advisory_unlock",
        "advisory_unlock_shared",
    )
    for args in ("1162627927", "1, 2")
]
WRITER_CALLS = [
    "SELECT lo_from_bytea(0, '\\x00'::bytea)",
    "SELECT lo_create(0)",
    "SELECT lo_creat(-1)",
    "SELECT lo_put(1, 0, '\\x00'::bytea)",
    "SELECT lowrite(0, '\\x00'::bytea)",
    "SELECT pg_notify('elephant_embedding', 'x')",
]


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    with api_client(elephant.settings, elephant) as client:
        response = client.post(
            "/commit", json={"text": "Lima keeps the limits"}, headers={"X-Elephant-Tenant": TENANT}
        )
        assert response.status_code in (200, 201), response.text
    return elephant


@pytest.fixture()
def guard(seeded: Elephant) -> Iterator[AnalystGuard]:
    running = AnalystGuard(seeded.db.admin_conninfo, interval_s=0.25, idle_seconds=GUARD_IDLE_S)
    running.start()
    yield running
    running.stop()


@pytest.fixture()
def analyst(seeded: Elephant, request: pytest.FixtureRequest) -> Iterator[analysts.CreatedAnalyst]:
    name = "lim_" + request.node.name.removeprefix("test_")[:20]
    made = analysts.create(
        seeded.db, AnalystIn(name=name, tenants=[TENANT], statement_timeout_seconds=2)
    )
    yield made
    if any(a.name == name for a in analysts.list_analysts(seeded.db)):
        analysts.revoke(seeded.db, name)


def connect_as(db: Database, role: str) -> psycopg.Connection[Any]:
    return psycopg.connect(analysts.login_conninfo(db, role), autocommit=True)


def refused(conn: psycopg.Connection[Any], statement: str) -> bool:
    try:
        conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege:
        return True
    except psycopg.Error:
        return False
    return False


def test_an_analyst_takes_no_advisory_lock_large_object_notify_or_temp_table(
    seeded: Elephant, analyst: analysts.CreatedAnalyst
) -> None:
    with connect_as(seeded.db, analyst.role) as conn:
        allowed = [call for call in ADVISORY_CALLS + WRITER_CALLS if not refused(conn, call)]
        assert allowed == []
        assert refused(conn, "SELECT pg_advisory_unlock_all()")
        with conn.transaction():
            conn.execute("SET LOCAL transaction_read_only = off")
            assert refused(conn, "CREATE TEMP TABLE lim_scratch (x int)")
        assert refused(conn, "SET temp_file_limit = '100GB'")
        assert conn.execute("SHOW temp_file_limit").fetchone() == (analysts.TEMP_FILE_LIMIT,)
        with conn.transaction():
            conn.execute("SET LOCAL transaction_read_only = off")
            assert refused(
                conn,
                sql.SQL("ALTER ROLE {} SET temp_file_limit = -1")
                .format(sql.Identifier(analyst.role))
                .as_string(conn),
            )
        assert conn.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone() == (0,)


def test_the_app_keeps_its_locks_temp_tables_and_notify(seeded: Elephant) -> None:
    with seeded.db.tenant(TENANT) as conn:
        assert conn.execute("SELECT pg_try_advisory_xact_lock(1, 2)").fetchone() == (True,)
        conn.execute("SELECT pg_notify('elephant_probe', 'x')")
        conn.execute("CREATE TEMP TABLE lim_app_scratch (x int) ON COMMIT DROP")
    with seeded.db.worker_connection() as conn:
        assert conn.execute("SELECT pg_try_advisory_xact_lock(3)").fetchone() == (True,)


def test_the_guard_puts_back_role_settings_and_password(
    seeded: Elephant, analyst: analysts.CreatedAnalyst, guard: AnalystGuard
) -> None:
    db = seeded.db
    before = next(a for a in analysts.list_analysts(db) if a.name == analyst.name)
    assert before.limits["statement_timeout"] == "2s"
    assert before.limits["temp_file_limit"] == analysts.TEMP_FILE_LIMIT
    assert before.limits["connection_limit"] == str(analysts.CONNECTION_LIMIT)
    with db.admin_connection() as conn:
        verifier = _verifier(conn, analyst.role)
    me = sql.Identifier(analyst.role)
    database = sql.Identifier(db.settings.embedded.database)
    with connect_as(db, analyst.role) as conn:
        conn.execute("SET default_transaction_read_only = off")
        for change in (
            sql.SQL("ALTER ROLE {} SET statement_timeout = 0").format(me),
            sql.SQL("ALTER ROLE {} SET idle_in_transaction_session_timeout = 0").format(me),
            sql.SQL("ALTER ROLE {} SET default_transaction_read_only = off").format(me),
            sql.SQL("ALTER ROLE {} SET work_mem = '16GB'").format(me),
            sql.SQL("ALTER ROLE {} IN DATABASE {} SET work_mem = '16GB'").format(me, database),
            sql.SQL("ALTER ROLE {} PASSWORD 'chosen-by-the-analyst'").format(me),
        ):
            conn.execute(change)
    changed_at = time.monotonic()
    deadline = changed_at + 3
    while True:
        now = next(a for a in analysts.list_analysts(db) if a.name == analyst.name)
        with db.admin_connection() as conn:
            restored = _verifier(conn, analyst.role) == verifier and not _per_database(
                conn, analyst.role
            )
        if (now.limits == before.limits and restored) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    print(f"the guard put back settings and password in {time.monotonic() - changed_at:.2f} s")
    assert now.limits == before.limits
    assert restored
    with connect_as(db, analyst.role) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("2s",)
        assert conn.execute("SHOW work_mem").fetchone() == (analysts.WORK_MEM,)
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
        # The fence's search_path (a list) comes back as it was: the dashboard reads work.
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)


def _verifier(conn: psycopg.Connection[Any], role: str) -> str:
    row = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (role,)).fetchone()
    assert row is not None
    return str(row[0])


def _per_database(conn: psycopg.Connection[Any], role: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_db_role_setting WHERE setrole = %s::regrole AND setdatabase <> 0",
        (role,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_statement_past_the_limit_is_cancelled_whatever_the_session_set(
    seeded: Elephant, analyst: analysts.CreatedAnalyst, guard: AnalystGuard
) -> None:
    with connect_as(seeded.db, analyst.role) as conn:
        conn.execute("SET statement_timeout = 0")
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT pg_sleep(60)")
        took = time.monotonic() - started
    print(f"a 60 s sleep under a 2 s limit, after SET statement_timeout = 0, ended at {took:.2f} s")
    assert 1.9 < took < 5, took


def test_a_session_idle_in_a_transaction_is_ended_whatever_it_set(
    seeded: Elephant, analyst: analysts.CreatedAnalyst, guard: AnalystGuard
) -> None:
    with connect_as(seeded.db, analyst.role) as conn:
        conn.execute("SET idle_in_transaction_session_timeout = 0")
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM memories")
        time.sleep(GUARD_IDLE_S + 2)
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")


def _owns_a_large_object(db: Database, role: str) -> int:
    """A large object owned by the analyst, as one made before migration 0018 would be."""
    with db.admin_connection() as conn:
        row = conn.execute("SELECT lo_from_bytea(0, %s)", (b"x" * 1024,)).fetchone()
        assert row is not None
        conn.execute(
            sql.SQL("ALTER LARGE OBJECT {} OWNER TO {}").format(
                sql.Literal(row[0]), sql.Identifier(role)
            )
        )
    return int(row[0])


def _nothing_left(db: Database, role: str, name: str, large_object: int) -> None:
    with db.admin_connection() as conn:
        for query, args in (
            ("SELECT count(*) FROM pg_roles WHERE rolname = %s", (role,)),
            ("SELECT count(*) FROM analysts WHERE role_name = %s", (role,)),
            ("SELECT count(*) FROM analyst_grants WHERE role_name = %s", (role,)),
            ("SELECT count(*) FROM pg_largeobject_metadata WHERE oid = %s", (large_object,)),
        ):
            assert conn.execute(query, args).fetchone() == (0,), query
    assert name not in [a.name for a in analysts.list_analysts(db)]


def test_the_cli_revokes_an_analyst_that_owns_a_large_object(seeded: Elephant) -> None:
    from click.testing import CliRunner

    from app.cli import main

    settings = seeded.settings
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    made = analysts.create(seeded.db, AnalystIn(name="lim_cli_lo", tenants=[TENANT]))
    large_object = _owns_a_large_object(seeded.db, made.role)
    with connect_as(seeded.db, made.role):  # a session open while it is revoked
        result = CliRunner().invoke(main, ["analysts", "revoke", "lim_cli_lo"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["name"] == "lim_cli_lo"
    _nothing_left(seeded.db, made.role, "lim_cli_lo", large_object)


def test_rest_revokes_an_analyst_that_owns_a_large_object(seeded: Elephant) -> None:
    with api_client(seeded.settings, seeded) as client:
        made = client.post("/analysts", json={"name": "lim_rest_lo", "tenants": [TENANT]})
        assert made.status_code == 201, made.text
        role = made.json()["role"]
        large_object = _owns_a_large_object(seeded.db, role)
        revoked = client.post("/analysts/lim_rest_lo/revoke", headers={"X-Elephant-Tenant": TENANT})
        assert revoked.status_code == 200, revoked.text
    _nothing_left(seeded.db, role, "lim_rest_lo", large_object)


def test_elephant_serve_runs_the_guard(seeded: Elephant, analyst: analysts.CreatedAnalyst) -> None:
    """No guard of the test's own: the one `elephant serve` starts cancels the sleep."""
    settings = seeded.settings
    port = free_port()
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    with open(settings.data_dir / f"serve-limits-{port}.log", "w+") as log:
        proc = subprocess.Popen(
            [ELEPHANT, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_healthy(proc, port, log)
            with connect_as(seeded.db, analyst.role) as conn:
                conn.execute("SET statement_timeout = 0")
                started = time.monotonic()
                with pytest.raises(psycopg.errors.QueryCanceled):
                    conn.execute("SELECT pg_sleep(60)")
                took = time.monotonic() - started
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    print(f"elephant serve's guard (1 s passes) ended the 2 s-limit sleep at {took:.2f} s")
    assert took < 6, took


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Any) -> None:
    started = time.monotonic()
    while time.monotonic() - started < START_WITHIN_S:
        if proc.poll() is not None:
            log.seek(0)
            pytest.fail(f"elephant serve exited with {proc.returncode}\n{log.read()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    log.seek(0)
    pytest.fail(f"elephant serve did not start\n{log.read()[-4000:]}")


def test_with_a_migrator_that_is_not_a_superuser_the_limits_and_revoke_hold(
    pg_server: EmbeddedPostgres,
    tmp_path: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
) -> None:
    """As on a team's own Postgres: the migrator owns the database and may create roles,
    no more. The grants of pg_catalog stay (docs/security.md); temp tables, the guard's
    cancels and settings, and revoke of a role owning a large object still hold."""
    name = new_database("limits_owner", empty=True)
    with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE ROLE lm_owner LOGIN CREATEROLE")
        conn.execute("GRANT pg_read_all_stats TO lm_owner")  # as docs/security.md asks
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO lm_owner").format(sql.Identifier(name)))
    with psycopg.connect(pg_server.conninfo(dbname=name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    url = f"postgresql://lm_owner@/{name}?host={pg_server.socket_dir}&port={pg_server.port}"
    database = {"url": url, "app_role": "lm_app", "worker_role": "lm_worker"}
    settings = make_settings(tmp_path, database={**database, "optional_extensions": ()})
    with Database(settings) as db:
        elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
        commit_note(elephant, TENANT, NoteIn(text="Lima keeps the limits"), wait=True)
        made = analysts.create(
            db, AnalystIn(name="lim_owned", tenants=[TENANT], statement_timeout_seconds=2)
        )
        assert "temp_file_limit" not in made.limits  # superuser-only: not settable here
        running = AnalystGuard(db.admin_conninfo, interval_s=0.25, idle_seconds=GUARD_IDLE_S)
        running.start()
        try:
            with connect_as(db, made.role) as conn:
                with conn.transaction():
                    conn.execute("SET LOCAL transaction_read_only = off")
                    assert refused(conn, "CREATE TEMP TABLE lim_scratch (x int)")
                conn.execute("SET statement_timeout = 0")
                started = time.monotonic()
                with pytest.raises(psycopg.errors.QueryCanceled):
                    conn.execute("SELECT pg_sleep(60)")
                assert time.monotonic() - started < 5
                conn.execute("SET default_transaction_read_only = off")
                conn.execute(
                    sql.SQL("ALTER ROLE {} SET statement_timeout = 0").format(
                        sql.Identifier(made.role)
                    )
                )
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                listed = next(a for a in analysts.list_analysts(db) if a.name == "lim_owned")
                if listed.limits == made.limits:
                    break
                time.sleep(0.1)
            assert listed.limits == made.limits
        finally:
            running.stop()
        with db.admin_connection() as conn:  # the guard lent it the role for a moment only
            lent = conn.execute(
                "SELECT count(*) FROM pg_auth_members WHERE roleid = %s::regrole "
                "AND member = 'lm_owner'::regrole AND NOT admin_option",
                (made.role,),
            ).fetchone()
        assert lent == (0,)
        large_object = _owns_a_large_object_as_superuser(pg_server, name, made.role)
        with connect_as(db, made.role):
            analysts.revoke(db, "lim_owned")
        with psycopg.connect(pg_server.conninfo(dbname=name), autocommit=True) as conn:
            for query, args in (
                ("SELECT count(*) FROM pg_roles WHERE rolname = %s", (made.role,)),
                ("SELECT count(*) FROM analysts WHERE role_name = %s", (made.role,)),
                ("SELECT count(*) FROM pg_largeobject_metadata WHERE oid = %s", (large_object,)),
            ):
                assert conn.execute(query, args).fetchone() == (0,), query


def _owns_a_large_object_as_superuser(server: EmbeddedPostgres, database: str, role: str) -> int:
    with psycopg.connect(server.conninfo(dbname=database), autocommit=True) as conn:
        row = conn.execute("SELECT lo_from_bytea(0, 'x')").fetchone()
        assert row is not None
        conn.execute(
            sql.SQL("ALTER LARGE OBJECT {} OWNER TO {}").format(
                sql.Literal(row[0]), sql.Identifier(role)
            )
        )
    return int(row[0])


def test_an_analyst_made_before_0018_gets_the_limits_and_is_revoked_whole(
    pg_server: EmbeddedPostgres, pg_data_dir: Path, new_database: Callable[..., str]
) -> None:
    """Upgrade: an analyst created as 0015 made them (5 minutes idle, no temp file limit,
    nothing recorded), owning a large object, gets the new limits and a record of them,
    and revoke leaves nothing of it."""
    name = new_database("limits_upgrade", empty=True)
    settings = make_settings(pg_data_dir, embedded={"database": name})
    params = migrations.SchemaParams(
        embedding_dim=settings.embedding.dim,
        embedding_model=settings.embedding.model,
        app_role=settings.database.app_role,
        optional_extensions=settings.database.optional_extensions,
    )
    conninfo = pg_server.conninfo(dbname=name)
    migrations.upgrade(conninfo, params, "0016_store_items")
    role = analysts.role_name(settings.database.app_role, "lim_old")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        _as_0015_made_it(conn, role, analysts.analyst_group(settings.database.app_role))
    large_object = _owns_a_large_object_as_superuser(pg_server, name, role)
    migrations.upgrade(conninfo, params)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT a.role_settings, a.verifier = p.rolpassword FROM analysts AS a "
            "JOIN pg_authid AS p ON p.rolname = a.role_name WHERE a.role_name = %s",
            (role,),
        ).fetchone()
    assert row is not None and row[1] is True
    recorded = dict(item.split("=", 1) for item in row[0])
    assert recorded["idle_in_transaction_session_timeout"] == "60s"
    assert recorded["temp_file_limit"] == analysts.TEMP_FILE_LIMIT
    assert recorded["work_mem"] == analysts.WORK_MEM
    assert recorded["statement_timeout"] == "30s"
    with Database(settings) as db:
        analysts.revoke(db, "lim_old")
        _nothing_left(db, role, "lim_old", large_object)


def _as_0015_made_it(conn: psycopg.Connection[Any], role: str, group: str) -> None:
    ident = sql.Identifier(role)
    conn.execute("INSERT INTO tenants (id) VALUES (%s) ON CONFLICT DO NOTHING", (TENANT,))
    conn.execute(
        sql.SQL(
            "CREATE ROLE {} LOGIN PASSWORD 'old-password' CONNECTION LIMIT 10 IN ROLE {}"
        ).format(ident, sql.Identifier(group))
    )
    for setting, value in (
        ("statement_timeout", "30s"),
        ("default_transaction_read_only", "on"),
        ("idle_in_transaction_session_timeout", "5min"),
        ("search_path", "public"),
    ):
        conn.execute(
            sql.SQL("ALTER ROLE {} SET {} = {}").format(
                ident, sql.Identifier(setting), sql.Literal(value)
            )
        )
    conn.execute(
        "INSERT INTO analysts (role_name, name, statement_timeout_seconds) VALUES (%s, %s, 30)",
        (role, "lim_old"),
    )
    conn.execute(
        "INSERT INTO analyst_grants (role_name, tenant_id) VALUES (%s, %s)", (role, TENANT)
    )


def test_an_analyst_cannot_log_in_to_the_clusters_own_databases(seeded: Elephant) -> None:
    """The cluster's own databases (`postgres`) let PUBLIC connect and make large
    objects, out of migration 0018's reach: the embedded server's pg_hba rules
    (app/db/embedded.py) keep analysts out of them."""
    db = seeded.db
    made = analysts.create(db, AnalystIn(name="lim_where", tenants=[TENANT]))
    try:
        login = analysts.login_conninfo(db, made.role)
        with psycopg.connect(login) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (made.role,)
        with pytest.raises(psycopg.OperationalError, match="pg_hba.conf rejects"):
            psycopg.connect(make_conninfo(login, dbname="postgres"))
    finally:
        analysts.revoke(db, "lim_where")


def test_revoke_drops_what_the_analyst_made_in_another_database(seeded: Elephant) -> None:
    """What a role owns in another database of the cluster (made before the embedded
    server kept analysts out of them, or on a team's own server) is dropped too."""
    db = seeded.db
    made = analysts.create(db, AnalystIn(name="lim_elsewhere", tenants=[TENANT]))
    owner = make_conninfo(db.admin_conninfo(), dbname="postgres")
    with psycopg.connect(owner, autocommit=True) as conn:
        row = conn.execute("SELECT lo_from_bytea(0, '\\x00'::bytea)").fetchone()
        assert row is not None
        conn.execute(
            sql.SQL("ALTER LARGE OBJECT {} OWNER TO {}").format(
                sql.Literal(row[0]), sql.Identifier(made.role)
            )
        )
    analysts.revoke(db, "lim_elsewhere")
    with psycopg.connect(make_conninfo(db.admin_conninfo(), dbname="postgres")) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_largeobject_metadata WHERE oid = %s", (row[0],)
        ).fetchone()
    assert left == (0,)
    _nothing_left(db, made.role, "lim_elsewhere", row[0])


def test_a_statement_holding_more_memory_than_the_limit_is_cancelled(seeded: Elephant) -> None:
    """work_mem = '16GB' is accepted (USERSET: Postgres cannot refuse it), but the guard
    sees the backend's memory on the embedded server and cancels the statement."""
    db = seeded.db
    made = analysts.create(
        db, AnalystIn(name="lim_memory", tenants=[TENANT], statement_timeout_seconds=60)
    )
    running = AnalystGuard(db.admin_conninfo, interval_s=0.25, memory_limit_mb=64)
    running.start()
    try:
        with connect_as(db, made.role) as conn:
            # Within its role's work_mem the same sort spills to disk and runs to the end.
            conn.execute(
                "SELECT count(*), pg_sleep(1) FROM (SELECT g FROM generate_series(1, "
                "3000000) AS g ORDER BY g DESC) AS sorted"
            )
            conn.execute("SET work_mem = '16GB'")
            started = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled):
                conn.execute(
                    "SELECT count(*), pg_sleep(30) FROM (SELECT g FROM generate_series(1, "
                    "3000000) AS g ORDER BY g DESC) AS sorted"
                )
            took = time.monotonic() - started
    finally:
        running.stop()
        analysts.revoke(db, "lim_memory")
    print(f"a sort in 16GB of work_mem was cancelled past 64 MB at {took:.2f} s")
    assert took < 20, took

"""Behind a transaction pooler: a real PgBouncer (transaction mode) with ONE server connection.

Two app clients (two Database objects, as two processes would be) of two tenants share
that single server connection, transaction by transaction. Each must see only its own
tenant and its own settings: a setting made in one transaction (the tenant, the statement
timeout, the time zone) must not be visible in the next, whoever runs it. A careless
client's session ``SET`` does stay on the server connection (shown here), which is why
Elephant sets nothing per session behind a pooler. And the app refuses a login that is a
superuser, has BYPASSRLS, or is not its role.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.config import Settings, load_settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.errors import ConfigError
from tests.conftest import free_port, make_settings
from tests.pgbouncer_support import PgBouncer

APP, WORKER = "elephant_app", "elephant_worker"
BYPASS = "pooler_test_bypass"  # a login with BYPASSRLS (cluster-wide: dropped at the end)
TIMEOUTS = {"pool-a": 1111, "pool-b": 2222}  # ms: each client's own statement_timeout
ROUNDS = 12


@pytest.fixture(scope="module")
def bouncer(pg_server: EmbeddedPostgres, pg_data_dir: Path) -> Iterator[PgBouncer]:
    with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(BYPASS)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN BYPASSRLS").format(sql.Identifier(BYPASS)))
    one = PgBouncer(
        pg_data_dir / "pgbouncer-one",
        pg_server,
        free_port(),
        pool_size=1,
        users=(APP, WORKER, BYPASS),
    ).start()
    try:
        yield one
    finally:
        one.stop()
        with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(BYPASS)))


@pytest.fixture(scope="module")
def pooled_settings(settings: Settings, bouncer: PgBouncer) -> Callable[..., Settings]:
    """Settings of this module's database with the app and the worker behind ``bouncer``."""
    name = settings.embedded.database

    def build(**database: Any) -> Settings:
        return make_settings(
            settings.data_dir,
            embedded={"database": name},
            database={
                "pooler": "transaction",
                "app_url": bouncer.url(APP, name),
                "worker_url": bouncer.url(WORKER, name),
                "pool_min_size": 1,
                "pool_max_size": 2,
                **database,
            },
        )

    return build


@pytest.fixture(scope="module")
def clients(
    pg_server: EmbeddedPostgres, settings: Settings, pooled_settings: Callable[..., Settings]
) -> Iterator[dict[str, Database]]:
    """One Database per tenant, each with its own statement timeout; the database's own
    time zone is not UTC, so only a per-transaction setting can make it UTC."""
    with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET TimeZone = 'Asia/Tokyo'").format(
                sql.Identifier(settings.embedded.database)
            )
        )
    opened: dict[str, Database] = {}
    try:
        for tenant, timeout in TIMEOUTS.items():
            database = Database(pooled_settings(statement_timeout_ms=timeout))
            database.open()
            opened[tenant] = database
        yield opened
    finally:
        for database in opened.values():
            database.close()


def state(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT pg_backend_pid(), current_setting('elephant.tenant_id', true), "
        "current_setting('statement_timeout'), current_setting('TimeZone'), current_user"
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_two_tenants_interleaving_on_one_server_connection_see_only_their_own(
    clients: dict[str, Database],
) -> None:
    seen: dict[str, list[tuple[Any, ...]]] = {tenant: [] for tenant in clients}
    failures: list[Exception] = []
    start = threading.Barrier(len(clients))

    def run(tenant: str) -> None:
        try:
            start.wait(timeout=30)
            for round_ in range(ROUNDS):
                with clients[tenant].tenant(tenant) as conn:
                    conn.execute(
                        "INSERT INTO conversations (tenant_id, external_id) VALUES (%s, %s)",
                        (tenant, f"{tenant}-{round_}"),
                    )
                    rows = conn.execute("SELECT tenant_id, external_id FROM conversations")
                    owners = {row[0] for row in rows.fetchall()}
                    seen[tenant].append((*state(conn), owners))
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(tenant,)) for tenant in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    pids = set()
    for tenant, rounds in seen.items():
        assert len(rounds) == ROUNDS
        for pid, in_tenant, timeout, zone, user, owners in rounds:
            pids.add(pid)
            assert (in_tenant, timeout, zone, user) == (tenant, f"{TIMEOUTS[tenant]}ms", "UTC", APP)
            assert owners == {tenant}  # row-level security on the per-transaction tenant
    assert len(pids) == 1, f"pool_size = 1 must give one server connection, got {pids}"
    for tenant, database in clients.items():
        with database.tenant(tenant) as conn:
            count = conn.execute("SELECT count(*) FROM conversations").fetchone()
        assert count == (ROUNDS,)


def test_a_setting_lives_one_transaction_though_a_session_set_stays(
    clients: dict[str, Database], bouncer: PgBouncer, settings: Settings
) -> None:
    a, b = clients["pool-a"], clients["pool-b"]
    careless = psycopg.connect(bouncer.url(APP, settings.embedded.database), autocommit=True)
    with careless:
        careless.execute("SET statement_timeout = '7s'")  # session state on the server side
        with a.tenant("pool-a") as conn:
            first = state(conn)
        with b.connection() as conn:  # no tenant: the previous transaction's is gone
            second = state(conn)
        with b.reading("pool-b") as conn:
            third = state(conn)
        with a.worker_connection() as conn:
            worker = state(conn)
        bare = state(careless)
    assert first[0] == second[0] == third[0] == bare[0]  # one server connection throughout
    assert first[1:] == ("pool-a", "1111ms", "UTC", APP)
    assert second[1] in (None, "") and second[2:] == ("2222ms", "UTC", APP)
    assert third[1:] == ("pool-b", "2222ms", "UTC", APP)
    assert worker[3:] == ("UTC", WORKER)
    # What Elephant avoids: the careless session's SET stayed on the shared server
    # connection (so it reached Elephant's transactions too, where set_config(..., true)
    # overrode it), and a client that sets nothing gets the database's own time zone.
    assert bare[2:4] == ("7s", "Asia/Tokyo")


def test_nothing_is_prepared_on_the_shared_server_connection(
    clients: dict[str, Database],
) -> None:
    """psycopg would prepare after 5 runs (and at once with prepare=True): on a server
    connection shared by two clients, each would meet the other's statement names."""
    for round_ in range(8):
        for tenant, database in clients.items():
            with database.tenant(tenant) as conn:
                row = conn.execute("SELECT %s::int + 1", (round_,), prepare=True).fetchone()
            assert row == (round_ + 1,)
    with clients["pool-a"].connection() as conn:
        assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone() == (0,)


@pytest.mark.parametrize(
    ("database", "fragment"),
    [
        ({"app_url": "postgres"}, "database.app_url logs in as postgres, which is a superuser"),
        ({"app_url": BYPASS}, f"database.app_url logs in as {BYPASS}, which has BYPASSRLS"),
        ({"app_url": WORKER}, f"logs in as {WORKER}, which is not the role {APP}"),
        ({"worker_url": APP}, f"database.worker_url logs in as {APP}, which is not the role"),
    ],
)
def test_a_login_that_is_not_its_role_is_refused(
    pooled_settings: Callable[..., Settings],
    bouncer: PgBouncer,
    settings: Settings,
    database: dict[str, str],
    fragment: str,
) -> None:
    name = settings.embedded.database
    urls = {key: bouncer.url(user, name) for key, user in database.items()}
    refused = Database(pooled_settings(**urls))
    try:
        with pytest.raises(ConfigError, match=fragment):
            refused.open()
        assert not refused.is_open
    finally:
        refused.close()


def test_a_pooler_needs_both_role_urls() -> None:
    with pytest.raises(ConfigError, match="pooler = transaction needs app_url and worker_url"):
        load_settings({"ELEPHANT_DATABASE_POOLER": "transaction"})
    with pytest.raises(ConfigError, match="needs worker_url") as caught:
        load_settings(
            {
                "ELEPHANT_DATABASE_POOLER": "transaction",
                "ELEPHANT_DATABASE_APP_URL": "postgresql://elephant_app:s3cret@pooler/db",
            }
        )
    assert "s3cret" not in caught.value.message

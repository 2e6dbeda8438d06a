"""No session outside the app stalls it: issue 40, items 2 and 3 (docs/security.md,
"Bounded lock waits").

Two kinds of outsider, each holding every lock it is able to take: an analyst of tenant
A (app.services.access.analysts), and a plain session logged in as the app role (what a
leaked app password or a psql left open gives). The locks: the advisory keys the app
uses (keyword-index rebuild, migration, BM25 keeper, re-embed, maintenance scheduling,
B's graph provisioning, B's store item) and one open transaction that read every table
and view it may (B's graph included, if it may). A key the session is refused (the
analyst limits revoke the advisory-lock functions where the migrator is a superuser)
counts as not taken.

While they hold them: a new `elephant serve` answers /health within its normal start
time, and B's commit, store put and tenant erasure each succeed within 2 s, or, where
the lock truly must be waited for (B's own store item key, a table the app role locked),
answer 503 with Retry-After within the lock bound and then succeed once released.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql

from app.config import Settings
from app.db import Database, migrate
from app.errors import Conflict, DatabaseUnavailable
from app.services.access import analysts
from app.services.access.analysts import AnalystIn
from app.services.graph.age import graph_name
from app.services.lifecycle.maintenance import TASKS, job_kind
from app.services.ops.reembed import embedders
from app.services.ops.reembed import state as reembed_state
from app.services.runtime import Elephant
from tests.conftest import api_client, free_port

ELEPHANT = str(Path(sys.executable).parent / "elephant")
A, B = "locks-a", "locks-b"
ITEM_NS, ITEM_KEY = ["prefs"], "colour"
KEYWORD_KEY = 1162627927  # app/db/keyword_index.py _LOCK, the key of issue 40's reproduction
MIGRATION_KEY = 0x656C657068616E74  # migrations/env.py MIGRATION_LOCK
KEEPER_KEY = 0x454C5456  # app/db/tenant_indexes.py _LOCK
REEMBED_KEY = 0x454C455245454D42  # app/services/ops/reembed/state.py _ADVISORY_KEY
WITHIN_S = 2.0  # the bound for B's commit, put and erasure
BUSY_WITHIN_S = 5.0  # a 503 for a lock that must be waited for comes within this
START_WITHIN_S = 120.0  # `elephant serve` on a loaded 2-core machine (test_startup.py)


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    """A and B with a note, a graph entity and a store item each."""
    with api_client(elephant.settings, elephant) as client:
        for tenant in (A, B):
            head = {"X-Elephant-Tenant": tenant}
            note = {"text": f"{tenant} keeps the ledger in the blue cupboard."}
            assert client.post("/commit", json=note, headers=head).status_code in (200, 201)
            entity = {"entities": [{"name": f"Owner of {tenant}", "entity_type": "person"}]}
            assert client.post("/graph/entities", json=entity, headers=head).status_code in (
                200,
                201,
            )
            item = {"namespace": ITEM_NS, "key": ITEM_KEY, "value": {"content": "teal"}}
            assert client.put("/store/items", json=item, headers=head).status_code == 200
    return elephant


@pytest.fixture(scope="module")
def analyst(seeded: Elephant) -> Iterator[analysts.CreatedAnalyst]:
    created = analysts.create(seeded.db, AnalystIn(name="locker", tenants=[A]))
    yield created
    if any(a.name == "locker" for a in analysts.list_analysts(seeded.db)):
        analysts.revoke(seeded.db, "locker")


def _keys(db: Database) -> list[tuple[str, tuple[int, ...]]]:
    """(what, advisory key) of every lock the app takes, B's store item and graph too."""
    with db.admin_connection() as conn:
        item = conn.execute(
            "SELECT hashtextextended(%s || chr(31) || %s || chr(31) || %s, 0), hashtext(%s)",
            (B, ".".join(ITEM_NS), ITEM_KEY, graph_name(B)),
        ).fetchone()
        kinds = conn.execute(
            "SELECT hashtext('elephant_schedule_maintenance'), hashtext(k) "
            "FROM unnest(%s::text[]) AS k",
            ([job_kind(kind) for kind in TASKS],),
        ).fetchall()
    assert item is not None
    keys: list[tuple[str, tuple[int, ...]]] = [
        ("keyword rebuild", (KEYWORD_KEY,)),
        ("migration", (MIGRATION_KEY,)),
        ("keeper", (KEEPER_KEY,)),
        ("re-embed", (REEMBED_KEY,)),
        ("B's store item", (int(item[0]),)),
        ("B's graph provisioning", (int(item[1]),)),
    ]
    return keys + [(f"maintenance {i}", (int(a), int(b))) for i, (a, b) in enumerate(kinds)]


def _readable(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    """(schema, relation) of every table and view this session's role may SELECT."""
    rows = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class AS c "
        "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p', 'v', 'm') "
        "AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') "
        "AND has_table_privilege(c.oid, 'SELECT')"
    ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


@contextlib.contextmanager
def holding(conninfo: str, keys: list[tuple[str, tuple[int, ...]]]) -> Iterator[dict[str, Any]]:
    """A session holding every advisory key it may take (session-level, not ended by an
    idle timeout), and another with an open transaction that read every relation it
    may. Yields what was taken; released (the sessions closed) on exit."""
    locker = psycopg.connect(conninfo, autocommit=True)
    reader = psycopg.connect(conninfo, autocommit=True)
    taken: dict[str, Any] = {"keys": [], "refused": [], "relations": []}
    try:
        with contextlib.suppress(psycopg.Error):
            locker.execute("SET statement_timeout = 0")
        for what, key in keys:
            placeholders = ", ".join(["%s"] * len(key))
            try:
                locker.execute(f"SELECT pg_advisory_lock({placeholders})", key)
                taken["keys"].append(what)
            except psycopg.Error:
                taken["refused"].append(what)
        relations = _readable(reader)
        reader.execute("BEGIN")
        for schema, name in relations:
            reader.execute("SAVEPOINT s")
            try:
                reader.execute(
                    sql.SQL("SELECT 1 FROM {} LIMIT 1").format(sql.Identifier(schema, name))
                )
                reader.execute("RELEASE SAVEPOINT s")  # its AccessShare lock stays
                taken["relations"].append(f"{schema}.{name}")
            except psycopg.Error:
                reader.execute("ROLLBACK TO SAVEPOINT s")
        yield taken
    finally:
        reader.close()
        locker.close()


def outsiders(db: Database, analyst: analysts.CreatedAnalyst) -> list[tuple[str, str]]:
    return [
        ("analyst of A", analysts.login_conninfo(db, analyst.role)),
        ("app role", db.app_conninfo()),
    ]


def timed(call: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def assert_done_or_busy(response: Any, took: float, what: str, *, busy_allowed: bool) -> bool:
    """Done within WITHIN_S, or (``busy_allowed``) a 503 with Retry-After within
    BUSY_WITHIN_S. True when it was done."""
    print(f"{what}: {response.status_code} in {took:.2f} s")
    if response.status_code in (200, 201):
        assert took <= WITHIN_S, f"{what} took {took:.1f} s"
        return True
    assert busy_allowed, f"{what}: {response.status_code} {response.text}"
    assert response.status_code == 503, f"{what}: {response.status_code} {response.text}"
    assert response.headers.get("Retry-After"), f"{what}: a 503 without Retry-After"
    assert "lock" in response.text, response.text
    assert took <= BUSY_WITHIN_S, f"{what}: the 503 came after {took:.1f} s"
    return False


# ------------------------------------------------------------------ writes and erasure


@pytest.mark.parametrize("who", ["analyst of A", "app role"])
def test_b_commits_puts_and_is_erased_while_an_outsider_holds_every_lock(
    seeded: Elephant, analyst: analysts.CreatedAnalyst, who: str
) -> None:
    db = seeded.db
    conninfo = dict(outsiders(db, analyst))[who]
    tenant = f"{B}-{'an' if who.startswith('analyst') else 'ap'}"
    head = {"X-Elephant-Tenant": tenant}
    item = {"namespace": ITEM_NS, "key": ITEM_KEY, "value": {"content": "teal"}}
    with api_client(seeded.settings, seeded) as client:
        assert client.put("/store/items", json=item, headers=head).status_code == 200
        ent = {"entities": [{"name": "Owner", "entity_type": "person"}]}
        assert client.post("/graph/entities", json=ent, headers=head).status_code in (200, 201)
        keys = _keys(db) + _tenant_keys(db, tenant)
        with holding(conninfo, keys) as taken:
            print(who, "took", taken["keys"], "refused", taken["refused"])
            print(who, "read", len(taken["relations"]), "relations")
            response, took = timed(
                lambda: client.post(
                    "/commit", json={"text": "Bravo moved the ledger."}, headers=head
                )
            )
            assert_done_or_busy(response, took, "B's commit", busy_allowed=False)
            item["value"] = {"content": "navy"}
            response, took = timed(lambda: client.put("/store/items", json=item, headers=head))
            put_done = assert_done_or_busy(
                response, took, "B's put", busy_allowed=f"{tenant} item" in taken["keys"]
            )
            response, took = timed(
                lambda: client.post("/erase", json={"tenant": True}, headers=head)
            )
            graph_read = any(r.startswith(graph_name(tenant) + ".") for r in taken["relations"])
            erased = assert_done_or_busy(
                response,
                took,
                "B's erasure",
                busy_allowed=who == "app role" and graph_read,
            )
        # Released: what had to wait now succeeds within the bound.
        if not put_done:
            response, took = timed(lambda: client.put("/store/items", json=item, headers=head))
            assert_done_or_busy(response, took, "B's put, released", busy_allowed=False)
        if not put_done or not erased:
            response, took = timed(
                lambda: client.post("/erase", json={"tenant": True}, headers=head)
            )
            assert_done_or_busy(response, took, "B's erasure, released", busy_allowed=False)
    with db.admin_connection() as conn:
        left = conn.execute("SELECT count(*) FROM tenants WHERE id = %s", (tenant,)).fetchone()
    assert left is not None and left[0] == 0, "the tenant was not erased"


def _tenant_keys(db: Database, tenant: str) -> list[tuple[str, tuple[int, ...]]]:
    with db.admin_connection() as conn:
        row = conn.execute(
            "SELECT hashtextextended(%s || chr(31) || %s || chr(31) || %s, 0), hashtext(%s)",
            (tenant, ".".join(ITEM_NS), ITEM_KEY, graph_name(tenant)),
        ).fetchone()
    assert row is not None
    return [(f"{tenant} item", (int(row[0]),)), (f"{tenant} graph", (int(row[1]),))]


def test_a_table_the_app_role_locked_is_a_503_with_retry_after_then_the_write_lands(
    seeded: Elephant,
) -> None:
    """The app role can lock a table the app writes (SHARE mode): the write waits only
    database.lock_timeout_ms, answers 503 with Retry-After, writes nothing, and lands
    once the lock is gone."""
    db = seeded.db
    tenant = f"{B}-table"
    with api_client(seeded.settings, seeded) as client:
        head = {"X-Elephant-Tenant": tenant}
        assert client.post(
            "/commit", json={"text": "Bravo keeps the ledger in the Lisbon office."}, headers=head
        ).status_code in (
            200,
            201,
        )
        with psycopg.connect(db.app_conninfo()) as outsider:
            outsider.execute("LOCK TABLE memories IN SHARE MODE")
            response, took = timed(
                lambda: client.post(
                    "/commit",
                    json={"text": "Bravo moved to Porto on 3 March 2025 with Maya."},
                    headers=head,
                )
            )
            assert_done_or_busy(response, took, "a commit behind a table lock", busy_allowed=True)
            assert response.status_code == 503
            outsider.rollback()
        response, took = timed(
            lambda: client.post(
                "/commit",
                json={"text": "Bravo moved to Porto on 3 March 2025 with Maya."},
                headers=head,
            )
        )
        assert_done_or_busy(response, took, "the commit, released", busy_allowed=False)


# ------------------------------------------------------------------ start


def test_serve_answers_health_while_outsiders_hold_every_lock(
    seeded: Elephant, analyst: analysts.CreatedAnalyst
) -> None:
    settings: Settings = seeded.settings
    db = seeded.db
    keys = _keys(db)
    with contextlib.ExitStack() as stack:
        for who, conninfo in outsiders(db, analyst):
            taken = stack.enter_context(holding(conninfo, keys))
            print(who, "took", taken["keys"], "refused", taken["refused"])
        took = _serve_until_healthy(settings)
    print(f"elephant serve answered /health in {took:.1f} s with every lock held")


def _serve_until_healthy(settings: Settings) -> float:
    port = free_port()
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    with open(settings.data_dir / f"serve-locks-{port}.log", "w+") as log:
        proc = subprocess.Popen(
            [ELEPHANT, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started = time.monotonic()
        try:
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"elephant serve exited with {proc.returncode}\n{log.read()}")
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                        return time.monotonic() - started
                except httpx.HTTPError:
                    pass
                if time.monotonic() - started > START_WITHIN_S:
                    log.seek(0)
                    pytest.fail(
                        f"elephant serve did not answer /health within {START_WITHIN_S:.0f} s "
                        f"while outsiders held locks\n{log.read()[-4000:]}"
                    )
                time.sleep(0.5)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ------------------------------------------------------------------ NOTIFY


def test_an_analysts_notify_on_the_embedding_channel_wakes_nothing(
    seeded: Elephant, analyst: analysts.CreatedAnalyst
) -> None:
    """Any role may NOTIFY elephant_embedding: the follower syncs only for the migrator's
    notifications (a re-embed), and at most once a second however many arrive."""
    follower = embedders.EmbeddingFollower(seeded, seeded.embedder, poll_s=3600)
    synced: list[float] = []
    real_sync = follower.sync
    counted = threading.Lock()

    def counting_sync(conn: Any, *args: Any, **kwargs: Any) -> None:
        with counted:
            synced.append(time.monotonic())
        real_sync(conn, *args, **kwargs)

    follower.sync = counting_sync  # type: ignore[method-assign]
    follower.start()
    try:
        deadline = time.monotonic() + 30
        while not synced:  # the first sync, at start
            assert time.monotonic() < deadline, "the follower never synced"
            time.sleep(0.1)
        time.sleep(1.5)
        before = len(synced)
        with psycopg.connect(
            analysts.login_conninfo(seeded.db, analyst.role), autocommit=True
        ) as conn:
            for _ in range(30):
                conn.execute("NOTIFY elephant_embedding, 'swapped'")
                time.sleep(0.05)
            time.sleep(2.0)
        assert len(synced) == before, "an analyst's NOTIFY woke the follower"
        with seeded.db.admin_connection() as conn:
            for _ in range(10):
                conn.execute("NOTIFY elephant_embedding, 'swapped'")
        deadline = time.monotonic() + 10
        while len(synced) == before:
            assert time.monotonic() < deadline, "the migrator's NOTIFY did not wake it"
            time.sleep(0.1)
        time.sleep(2.0)
        assert len(synced) - before <= 3, "ten notifications woke it more than once a second"
    finally:
        follower.stop()


# ------------------------------------------------------------------ migrations


def test_a_start_at_head_takes_no_lock_and_a_migration_names_who_holds_its_lock(
    seeded: Elephant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At head with today's sql/objects/ a start reads and returns (no lock), whatever is
    held; `elephant migrate` waits for the migration's advisory lock and for each DDL
    statement's table lock only as long as its bounds, then fails naming the holder."""
    db = seeded.db
    monkeypatch.setattr(migrate, "MIGRATION_LOCK_WAIT_S", 1.0)
    monkeypatch.setattr(migrate, "MIGRATION_LOCK_TIMEOUT_MS", 1000)
    with psycopg.connect(db.app_conninfo(), autocommit=True) as holder:
        holder.execute("SET application_name = 'the locker'")
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_KEY,))
        holder.execute("BEGIN")
        holder.execute("SELECT 1 FROM current_facts LIMIT 1")  # ACCESS SHARE on a view
        started = time.monotonic()
        db.migrate(if_needed=True)
        assert time.monotonic() - started < WITHIN_S, "a start at head waited"

        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable) as refused:
            db.migrate()
        assert time.monotonic() - started < BUSY_WITHIN_S
        message = refused.value.message
        assert "advisory lock" in message and "the locker" in message, message
        assert f"pid {holder.info.backend_pid}" in message and "pg_terminate_backend" in message

        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_KEY,))
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable) as refused:
            db.migrate()  # re-applies current_facts: waits for the reader's lock, 1 s
        assert time.monotonic() - started < BUSY_WITHIN_S
        message = refused.value.message
        assert "could not lock a table" in message and "the locker" in message, message
        holder.execute("ROLLBACK")
    db.migrate()  # released: it runs


def test_an_operators_re_embed_command_waits_a_bounded_time_for_its_lock(
    seeded: Elephant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`elephant reembed run/start/cancel` wait for a step elsewhere, at most
    STEP_WAIT_S, then say who holds the key (an outside session may never let go)."""
    monkeypatch.setattr(reembed_state, "STEP_WAIT_S", 1.0)
    with psycopg.connect(seeded.db.app_conninfo(), autocommit=True) as holder:
        holder.execute("SET application_name = 'the locker'")
        holder.execute("SELECT pg_advisory_lock(%s)", (REEMBED_KEY,))
        with seeded.db.admin_connection() as conn:
            started = time.monotonic()
            with pytest.raises(Conflict) as refused, reembed_state.stepping(conn, wait=True):
                pass
            assert time.monotonic() - started < BUSY_WITHIN_S
            assert "the locker" in refused.value.message, refused.value.message
            holder.execute("SELECT pg_advisory_unlock(%s)", (REEMBED_KEY,))
            with reembed_state.stepping(conn, wait=True) as mine:
                assert mine


def test_erasing_a_tenant_ends_its_analysts_sessions_first(seeded: Elephant) -> None:
    """An analyst of the tenant, mid-transaction over everything it may read (the
    tenant's graph included), is losing the tenant: the erasure ends its session and
    succeeds within the bound instead of waiting for it."""
    db = seeded.db
    tenant = f"{B}-own"
    with api_client(seeded.settings, seeded) as client:
        head = {"X-Elephant-Tenant": tenant}
        note = {"text": "Bravo keeps the ledger in the Lisbon office."}
        assert client.post("/commit", json=note, headers=head).status_code in (200, 201)
        ent = {"entities": [{"name": "Owner", "entity_type": "person"}]}
        assert client.post("/graph/entities", json=ent, headers=head).status_code in (200, 201)
        own = analysts.create(db, AnalystIn(name="own_b", tenants=[tenant]))
        try:
            with holding(analysts.login_conninfo(db, own.role), []) as taken:
                print("the tenant's analyst read", len(taken["relations"]), "relations")
                assert taken["relations"], "the analyst read nothing"
                response, took = timed(
                    lambda: client.post("/erase", json={"tenant": True}, headers=head)
                )
                assert_done_or_busy(response, took, "the erasure", busy_allowed=False)
            with db.admin_connection() as conn:
                left = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (own.role,)
                ).fetchone()
            assert left == (0,), "the analyst's sessions outlived the erasure of its tenant"
        finally:
            if any(a.name == "own_b" for a in analysts.list_analysts(db)):
                analysts.revoke(db, "own_b")

"""Read replicas for real: a streaming standby of a dedicated embedded server.

The module starts its own primary (the run's shared server is left alone), copies it
with ``pg_basebackup -R`` using the embedded binaries, and starts the copy as a hot
standby on another port and socket. Writes go through the service layer to the
primary; searches are shown to run on the standby, to fall back to the primary when
it stops, and to come back to it after the back-off.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote
from uuid import UUID, uuid4

import psycopg
import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.db import Database
from app.db.embedded import SERVICE_USER, SUPERUSER, EmbeddedPostgres, binaries_dir
from app.db.replicas import HEALTH, ReplicaSet, ReplicaUnavailable
from app.errors import NotFound
from app.providers.embedder import Embedder
from app.services.graph.models import EntityIn
from app.services.graph.operations import create_entities
from app.services.graph.reads import open_nodes
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.records import get_memory
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.ops.stats import stats
from app.services.retrieval.schemas import SearchFilters, SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import api_client, free_port, make_settings

T = "replicated"
WAIT_S = 30.0
Value = TypeVar("Value")


@dataclass
class Cluster:
    primary: EmbeddedPostgres
    standby: EmbeddedPostgres
    settings: Settings
    elephant: Elephant

    @property
    def db(self) -> Database:
        return self.elephant.db

    def served(self) -> int:
        return self.db.replica_states()[0].served


def wait_for(what: str, probe: Callable[[], Value | None], timeout_s: float = WAIT_S) -> Value:
    """Poll ``probe`` until it returns something other than None (or False), bounded."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except psycopg.Error as exc:
            last = exc
        if last is not None and last is not False and not isinstance(last, Exception):
            return last  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout_s:.0f}s (last seen: {last!r})")


def base_backup(primary: EmbeddedPostgres, target: Path) -> None:
    """``pg_basebackup -R`` of the primary into ``target`` (a standby's data dir), as the
    OS user the embedded servers run as."""
    run_as = SERVICE_USER if os.geteuid() == 0 else None
    target.parent.mkdir(parents=True, exist_ok=True)
    if run_as is not None:
        account = pwd.getpwnam(run_as)
        os.chown(target.parent, account.pw_uid, account.pw_gid)
    command = [
        str(binaries_dir() / "pg_basebackup"),
        # --no-sync: a throw-away copy; fsyncing every file cost seconds per run.
        *("-D", str(target), "-R", "-X", "stream", "-c", "fast", "--no-sync"),
        *("-h", str(primary.socket_dir), "-p", str(primary.port), "-U", SUPERUSER),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, user=run_as, cwd=target.parent, timeout=WAIT_S
    )
    assert done.returncode == 0, f"pg_basebackup failed: {done.stderr}"


def streaming(standby: EmbeddedPostgres) -> bool:
    with psycopg.connect(standby.conninfo(), autocommit=True) as conn:
        row = conn.execute("SELECT status FROM pg_stat_wal_receiver").fetchone()
    return row is not None and row[0] == "streaming"


def replayed(cluster: Cluster) -> float:
    """Seconds until the standby has replayed everything the primary wrote so far."""
    started = time.monotonic()
    with psycopg.connect(cluster.primary.conninfo(), autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
    assert row is not None
    with psycopg.connect(cluster.standby.conninfo(), autocommit=True) as conn:
        wait_for(
            f"standby replays up to {row[0]}",
            lambda: conn.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],)
            ).fetchone()[0],  # type: ignore[index]
        )
    return time.monotonic() - started


def replica_url(standby: EmbeddedPostgres, database: str) -> str:
    # The superuser on purpose: the replica pool must still SET ROLE to the app role.
    return f"postgresql://{SUPERUSER}@/{database}?host={quote(str(standby.socket_dir))}&port={standby.port}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("replicas")
    primary_port, standby_port = free_port(), free_port()
    with ExitStack() as cleanup:
        plain = make_settings(root, embedded={"port": primary_port})
        bootstrap = Database(plain)  # starts the dedicated primary and migrates it
        cleanup.callback(bootstrap.close)
        bootstrap.open()
        primary = bootstrap.embedded
        assert primary is not None
        cleanup.callback(primary.stop)  # whoever still holds it, even after a failure
        standby = EmbeddedPostgres(root / "standby", port=standby_port)
        base_backup(primary, standby.pgdata)
        cleanup.callback(standby.stop)
        standby.start()  # data dir present: no initdb; its own port and socket dir
        wait_for("the standby streams from the primary", lambda: streaming(standby))
        settings = make_settings(
            root,
            embedded={"port": primary_port},
            database={
                "replica_urls": [replica_url(standby, plain.embedded.database)],
                "replica_check_s": 0,
                "replica_retry_s": 0.5,
                "replica_timeout_s": 1,
            },
        )
        db = Database(settings)
        cleanup.callback(db.close)
        db.open()
        elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
        cleanup.callback(elephant.close_providers)
        yield Cluster(primary, standby, settings, elephant)


@pytest.fixture(scope="module")
def seeded(cluster: Cluster) -> Cluster:
    """A conversation (facts extracted) and another tenant's note, committed on the primary
    through the service layer and replayed by the standby."""
    commit_conversation(
        cluster.elephant,
        T,
        ConversationIn.model_validate(
            {
                "conversation_id": "c1",
                "session_date": "2024-05-02",
                "turns": [
                    {"speaker": "Ines", "text": "I keep a zymurgy journal for my sourdough."},
                    {"speaker": "Tom", "text": "Since when do you bake?"},
                    {"speaker": "Ines", "text": "I moved to Porto in March 2023 to bake bread."},
                ],
            }
        ),
        wait=True,
    )
    commit_note(cluster.elephant, "other-tenant", NoteIn(text="Ines' zymurgy journal is fiction"))
    replayed(cluster)
    return cluster


def test_what_the_primary_commits_is_searched_on_the_replica(seeded: Cluster) -> None:
    cluster, elephant = seeded, seeded.elephant
    before = cluster.served()
    found = search(elephant, T, SearchRequest(query="zymurgy journal", explain=True))
    assert cluster.served() == before + 1, "the replica pool did not serve the search"
    assert any("zymurgy journal for my sourdough" in hit.text for hit in found.hits)
    assert not any("fiction" in hit.text for hit in found.hits), "row-level security on replica"
    assert found.explain is not None
    assert found.explain.keyword_engine == "tsvector"  # bm25 finds nothing on a standby

    with cluster.db.reading(T) as conn:
        row = conn.execute(
            "SELECT pg_is_in_recovery(), current_user, current_setting('transaction_read_only'), "
            "current_setting('elephant.tenant_id')"
        ).fetchone()
        assert cluster.db.replica_of(conn) is not None
    assert row == (True, "elephant_app", "on", T)

    facts = search(
        elephant, T, SearchRequest(query="Where did Ines move?", filters=SearchFilters(kind="fact"))
    )
    assert any("Porto" in hit.text for hit in facts.hits), "the extracted facts reached the replica"
    served = cluster.served()
    report = stats(elephant, T)
    assert report.memories.total >= 1 and report.facts.total >= 1
    assert cluster.served() == served + 1, "stats did not read the replica"


def test_consistency_primary_reads_the_primary_and_sees_a_write_the_replica_lacks(
    seeded: Cluster,
) -> None:
    cluster = seeded
    elephant = cluster.elephant
    with psycopg.connect(cluster.standby.conninfo(), autocommit=True) as standby:
        standby.execute("SELECT pg_wal_replay_pause()")
        try:
            note = commit_note(
                elephant, T, NoteIn(text="Ines adopted a greyhound named Quokka"), wait=True
            )
            # Read back by id: the replica has not got it, the primary answers (no 404).
            served = cluster.served()
            assert note.memory_id is not None
            got = get_memory(elephant, T, UUID(str(note.memory_id)))
            assert "Quokka" in got.text
            assert cluster.served() == served + 1, "the replica was asked first"
            with pytest.raises(NotFound):
                get_memory(elephant, T, uuid4())
            before = cluster.served()
            stale = search(elephant, T, SearchRequest(query="greyhound Quokka"))
            fresh = search(
                elephant, T, SearchRequest(query="greyhound Quokka", consistency="primary")
            )
            assert cluster.served() == before + 1, "only the replica search went to the replica"
            assert not any("Quokka" in hit.text for hit in stale.hits)
            assert any("Quokka" in hit.text for hit in fresh.hits)
            with cluster.db.reading(T, "primary") as conn:
                in_recovery = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                assert cluster.db.replica_of(conn) is None
            assert in_recovery == (False,)
            read_only = pytest.raises(psycopg.errors.ReadOnlySqlTransaction)  # there too
            with read_only, cluster.db.reading(T, "primary") as conn:
                conn.execute("UPDATE memories SET importance = importance")

            # A replica further behind than replica_max_lag_s is skipped. Behind means: it
            # has received WAL it has not replayed (on a busy machine the walreceiver can
            # take a moment to get the note's WAL; until then the standby is level).
            wait_for(
                "the paused standby holds WAL it has not replayed",
                lambda: (
                    standby.execute(
                        "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()"
                    ).fetchone()[0]  # type: ignore[index]
                    or None
                ),
            )
            strict = cluster.settings.database.model_copy(update={"replica_max_lag_s": 0.1})
            replicas = ReplicaSet(
                strict.replica_urls, strict, cluster.db._configure_replica_connection
            )
            try:
                # Lag is the age of the last replayed commit: with replay paused it
                # passes 0.1 s at once, but wait for it rather than assume it.
                wait_for(
                    "the paused standby's replay lag passes 0.1 s",
                    lambda: (standby.execute(HEALTH).fetchone() or (None, 0.0))[1] > 0.1 or None,
                )
                assert replicas.acquire() is None, replicas.states()
                reason = replicas.states()[0].reason
                assert reason is not None and "replay lag" in reason, reason
            finally:
                replicas.close()
        finally:
            standby.execute("SELECT pg_wal_replay_resume()")
    replayed(cluster)
    caught_up = search(elephant, T, SearchRequest(query="greyhound Quokka"))
    assert any("Quokka" in hit.text for hit in caught_up.hits)


def test_graph_reads_run_on_the_replica(seeded: Cluster) -> None:
    cluster = seeded
    create_entities(cluster.elephant, T, [EntityIn(name="Quokka")])
    replayed(cluster)
    before = cluster.served()
    opened = open_nodes(cluster.elephant, T, ["Quokka"])
    assert [entity.name for entity in opened.entities] == ["Quokka"]
    assert cluster.served() == before + 1


def test_a_replica_lost_under_a_read_raises_a_retryable_error(seeded: Cluster) -> None:
    cluster = seeded
    with pytest.raises(ReplicaUnavailable) as raised, cluster.db.reading(T) as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()
        with psycopg.connect(cluster.standby.conninfo(), autocommit=True) as standby:
            standby.execute("SELECT pg_terminate_backend(%s)", pid)
        conn.execute("SELECT 1")
    assert raised.value.status_code == 503 and raised.value.retry_after_s
    assert cluster.db.replica_states()[0].healthy is False
    # After the back-off the replica is tried again and serves.
    before = cluster.served()
    wait_for(
        "the replica is back after its back-off",
        lambda: (
            search(cluster.elephant, T, SearchRequest(query="zymurgy")).hits
            and cluster.served() > before
        ),
        timeout_s=10,
    )


def test_a_stopped_replica_falls_back_to_the_primary_and_is_retried(seeded: Cluster) -> None:
    cluster = seeded
    elephant = cluster.elephant
    now = [0.0]
    retry_s = cluster.settings.database.replica_retry_s
    clocked = ReplicaSet(
        cluster.settings.database.replica_urls,
        cluster.settings.database,
        cluster.db._configure_replica_connection,
        clock=lambda: now[0],
    )
    try:
        cluster.standby.stop()
        try:
            before = cluster.served()
            started = time.monotonic()
            found = search(elephant, T, SearchRequest(query="zymurgy journal"))
            fallback_s = time.monotonic() - started
            assert any("zymurgy" in hit.text for hit in found.hits)
            assert cluster.served() == before
            state = cluster.db.replica_states()[0]
            assert state.healthy is False and state.reason, state
            assert fallback_s < 5, f"the fallback took {fallback_s:.1f}s"

            # Back-off, on a clock of our own: not tried again before it is over, then
            # tried (and failed) once, then the next wait is twice as long.
            assert clocked.acquire() is None
            assert clocked.states()[0].failures == 1
            started = time.monotonic()
            assert clocked.acquire() is None
            assert time.monotonic() - started < 0.5, "a replica in back-off was waited for"
            assert clocked.states()[0].failures == 1
            now[0] += retry_s
            assert clocked.acquire() is None
            assert clocked.states()[0].failures == 2
            now[0] += retry_s
            assert clocked.acquire() is None
            assert clocked.states()[0].failures == 2, "the second back-off doubles"
        finally:
            cluster.standby.start()
        wait_for("the restarted standby streams", lambda: streaming(cluster.standby))

        def after_the_back_off() -> Any:
            # A busy machine may fail the first try (the standby still starting up) and
            # double the back-off: each try comes after whatever back-off is due.
            now[0] += 3600
            return clocked.acquire()

        lease = wait_for("the replica set takes the standby back", after_the_back_off, timeout_s=30)
        clocked.release(lease, served=True)
        assert clocked.states()[0].healthy is True
    finally:
        clocked.close()
    wait_for(
        "searches return to the replica after its back-off",
        lambda: (
            search(elephant, T, SearchRequest(query="zymurgy")).hits and cluster.served() > before
        ),
        timeout_s=15,
    )
    assert cluster.db.replica_states()[0].healthy is True


def test_the_api_takes_the_consistency_flag(seeded: Cluster) -> None:
    cluster = seeded
    client: TestClient  # type: ignore[type-arg]
    with api_client(cluster.settings, cluster.elephant) as client:
        client.headers["X-Elephant-Tenant"] = T
        got = client.get("/search", params={"q": "zymurgy", "consistency": "primary"})
        assert got.status_code == 200, got.text
        assert got.json()["count"] >= 1
        posted = client.post("/search", json={"query": "zymurgy", "consistency": "replica"})
        assert posted.status_code == 200, posted.text
        assert posted.json()["count"] >= 1
        bad_get = client.get("/search", params={"q": "zymurgy", "consistency": "nearest"})
        bad_post = client.post("/search", json={"query": "zymurgy", "consistency": "nearest"})
        reflected = client.post("/reflect", json={"q": "zymurgy?", "consistency": "leader"})
    for bad in (bad_get, bad_post, reflected):
        assert bad.status_code == 422, bad.text
        assert "consistency" in bad.text, bad.text

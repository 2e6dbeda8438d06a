"""Re-embedding to a new model with no downtime (app/services/ops/reembed/).

Two real local models: the bundled all-MiniLM-L6-v2 (384-d) and a second encoder built
here, a small BERT (256-d, 2 layers) with MiniLM's tokenizer and seeded random weights,
saved as a Hugging Face model directory and loaded by the real LocalEmbedder, as the
reranker tests build their models. Its rankings mean little; what is checked is that
every vector is the target model's vector of the text the write path embedded, and that
search answers throughout.
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
from urllib.parse import urlencode

import numpy as np
import pytest
from psycopg.conninfo import conninfo_to_dict

from app.config import EmbeddingSettings, Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.errors import Conflict, InvalidInput
from app.providers.embedder import DEFAULT_MODEL, Embedder, LocalEmbedder
from app.services.graph import operations as ops
from app.services.graph.models import EntityIn, ObservationIn, RecordIn
from app.services.jobs.runner import drain
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.memory.window_vectors import stored_vectors
from app.services.ops import reembed
from app.services.ops.doctor import diagnose
from app.services.retrieval.lanes import LaneSizes
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import make_settings

TENANT = "reembed"
QUERIES = ("where did Maya lose her keys", "violin lessons", "project status", "postgres")
LONG = " ".join(
    f"Part {i} of the status report says the migration of shard {i} finished on time."
    for i in range(12)
)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second real encoder: 256-d BERT, seeded weights, MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from app.providers.embedder import _bundled_model_dir

    path = tmp_path_factory.mktemp("small-encoder")
    tokenizer = AutoTokenizer.from_pretrained(str(_bundled_model_dir()), local_files_only=True)
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=512,
        max_position_embeddings=512,
    )
    BertModel(config).save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def small(small_model: Path) -> Embedder:
    return LocalEmbedder(EmbeddingSettings(model=str(small_model), dim=256))


def seed(elephant: Elephant, tenant: str = TENANT) -> None:
    """Notes (one long, so it has passages), a conversation (windows, turn passages), facts
    and graph observations (facts whose vector text carries the entity's name)."""
    commit_note(elephant, tenant, NoteIn(text="Gina started violin lessons in September."))
    commit_note(elephant, tenant, NoteIn(text=LONG, force=True))
    conversation = ConversationIn.model_validate(
        {
            "turns": [
                {
                    "speaker": "Maya",
                    "text": "I lost my car keys at the gym last week.",
                    "timestamp": "2023-05-08T13:56:00Z",
                },
                {
                    "speaker": "Assistant",
                    "text": "Did you check the lost and found?",
                    "timestamp": "2023-05-08T13:57:00Z",
                },
                {"speaker": "Maya", "text": "Yes, nothing there. Keys are a nightmare."},
                {"speaker": "Maya", "text": "Can you recap the project status?"},
            ],
            "window_size": 2,
            "stride": 1,
            "force": True,
        }
    )
    commit_conversation(elephant, tenant, conversation, wait=True)
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(
                    name="Elephant",
                    entity_type="artifact",
                    observations=[
                        "Stores memories in Postgres",
                        ObservationIn(
                            content="chose pgvector over a separate store", kind="decided"
                        ),
                    ],
                )
            ]
        ),
    )
    drain(elephant)


def hit_ids(elephant: Elephant, query: str) -> list[str]:
    """The hits' ids from the vector lanes (the ones a re-embed changes), ranked without the
    priors that move with the clock. The keyword lane is off: BM25 corpus statistics move
    with every non-HOT row update until a vacuum (the backfill's or anyone's)."""
    request = SearchRequest(
        query=query,
        limit=10,
        expand=False,
        lanes=LaneSizes(graph=0, keyword=0),
        recency_weight=0,
    )
    return [hit.id for hit in search(elephant, TENANT, request, record_access=False).hits]


def columns(db: Database, table: str) -> list[str]:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum",
            (table,),
        ).fetchall()
    return [str(row[0]) for row in rows]


def stored(db: Database, table: str, column: str = "embedding") -> dict[str, tuple[str, Any]]:
    """Every row's text (as the re-embed rebuilds it) and its vector in ``column``, by id."""
    from pgvector.psycopg import register_vector

    with db.admin_connection() as conn:
        register_vector(conn)
        rows = conn.execute(reembed._select(table, "true")).fetchall()
        vectors = dict(conn.execute(f"SELECT id::text, {column} FROM {table}").fetchall())
    texts = reembed._texts(table, rows)
    return {
        str(row[0]): (text, vectors[str(row[0])]) for row, text in zip(rows, texts, strict=True)
    }


def assert_vectors_of(db: Database, model: Embedder, column: str = "embedding") -> int:
    """Every row of memories, facts and passages holds ``model``'s vector of its text (a
    window: pooled from its turns' passages, app/services/memory/window_vectors.py)."""
    checked = 0
    for table in reembed.TABLES:
        rows = stored(db, table, column)
        assert rows, f"no {table}: the seed stored none"
        ids = list(rows)
        if table == "memories":  # windows pooled from their turns' passages, as committed
            with db.admin_connection() as conn:
                pairs = [(i, rows[i][0]) for i in ids]
                expected = stored_vectors(conn, EmbeddingSettings(), model, pairs)
        else:
            expected = model.embed_documents([rows[i][0] for i in ids])
        for row_id, want in zip(ids, expected, strict=True):
            got = rows[row_id][1]
            assert got is not None, f"{table} {row_id} has no vector in {column}"
            got = np.asarray(got.to_numpy() if hasattr(got, "to_numpy") else got)
            assert got.shape == want.shape, f"{table} {row_id}: {got.shape} != {want.shape}"
            assert float(np.dot(got, want)) > 0.9999, (
                f"{table} {row_id} in {column} is not {model.model_name}'s vector of "
                f"{rows[row_id][0]!r}"
            )
            checked += 1
    return checked


def test_the_texts_rebuilt_from_rows_are_the_ones_the_write_paths_embedded(
    elephant: Elephant, embedder: Embedder
) -> None:
    """The re-embed reads each row's text back (windows, notes, facts, graph observations,
    turn and note passages): embedded with the current model it gives the stored vector."""
    seed(elephant)
    assert assert_vectors_of(elephant.db, embedder) > 20


def test_a_bad_target_is_refused_before_any_ddl(elephant: Elephant, small_model: Path) -> None:
    before = {table: columns(elephant.db, table) for table in reembed.TABLES}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"model": "no-such-model"}, "neither"),
        ({"model": str(small_model / "missing")}, "neither"),
        ({"model": str(small_model), "dimensions": 300}, "256-d vectors, not 300"),
        ({"model": str(small_model), "dimensions": 0}, "not within 1..16000"),
        ({"model": "  "}, "give the embedding model"),
        ({"model": DEFAULT_MODEL}, "already"),
    ]
    for arguments, message in cases:
        with pytest.raises(InvalidInput, match=message) as raised:
            reembed.start(elephant, **arguments)
        assert raised.value.status_code == 422
    assert {table: columns(elephant.db, table) for table in reembed.TABLES} == before
    assert reembed.status(elephant).phase == "idle"
    with elephant.db.admin_connection() as conn:
        row = conn.execute("SELECT to_regclass('elephant_reembed')").fetchone()
    assert row is not None and row[0] is None


@pytest.fixture
def following(settings: Settings, db: Database, embedder: Embedder) -> Iterator[Elephant]:
    """A runtime whose embedder follows the database (as a server's would)."""
    elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    reembed.follow(elephant, poll_s=0.2)
    yield elephant
    elephant.close_providers()


def test_reembed_to_another_dimension_with_search_answering_throughout(
    following: Elephant, db: Database, small: Embedder, small_model: Path
) -> None:
    elephant = following
    follower = elephant.embedder
    assert isinstance(follower, reembed.EmbeddingFollower)
    before = {query: hit_ids(elephant, query) for query in QUERIES}
    assert all(before.values()), "the seeded tenant answers every query"

    started = reembed.start(elephant, str(small_model))
    assert started.phase == "backfill" and started.target is not None
    assert started.target.dim == 256
    assert started.embedded == 0 and started.rows > 20
    assert "embedding_next" in columns(db, "memories")
    # the same target again: its status; another one: a conflict
    assert reembed.start(elephant, str(small_model)).phase == "backfill"
    with pytest.raises(Conflict, match="in progress"):
        reembed.start(elephant, str(small_model), 384)

    # the running process preloads the target while the backfill runs
    wait_for(lambda: follower.preloaded(started.target) is not None, "the follower preloads")  # type: ignore[arg-type]

    progress = reembed.step(elephant, batch=3)
    assert progress.phase == "backfill"
    doctor = {check.name: check for check in diagnose(elephant).checks}
    assert doctor["re-embed"].level == "ok"
    assert "backfill" in doctor["re-embed"].detail and "3/" in doctor["re-embed"].detail
    assert {query: hit_ids(elephant, query) for query in QUERIES} == before

    # written during the backfill, with the old model: caught up before the swap
    late = commit_note(elephant, TENANT, NoteIn(text="Maya found her keys in the car.", force=True))
    assert late.memory_id is not None
    with db.admin_connection() as conn:
        row = conn.execute(
            "SELECT embedding IS NOT NULL, embedding_next IS NULL FROM memories WHERE id = %s",
            (late.memory_id,),
        ).fetchone()
    assert row == (True, True)
    before = {query: hit_ids(elephant, query) for query in QUERIES}  # with the new note

    # a row whose vector changes after it was re-embedded loses its new vector
    while (progress := reembed.step(elephant, batch=3)).phase == "backfill":
        assert {query: hit_ids(elephant, query) for query in QUERIES[:1]} == {
            QUERIES[0]: before[QUERIES[0]]
        }
    with db.admin_connection() as conn:
        changed = conn.execute(
            "UPDATE memories SET embedding = embedding WHERE embedding_next IS NOT NULL "
            "AND id <> %s RETURNING id, embedding_next IS NULL",
            (late.memory_id,),
        ).fetchall()
    assert changed and all(cleared for _, cleared in changed)

    seen: list[str] = []
    while progress.phase not in ("swap", "finish", "done"):
        progress = reembed.step(elephant, batch=3)
        seen.append(progress.phase)
        assert {query: hit_ids(elephant, query) for query in QUERIES} == before
    assert "index" in seen
    with db.admin_connection() as conn:
        twins = conn.execute(
            "SELECT indexrelid::regclass::text, indisvalid FROM pg_index "
            "WHERE indexrelid::regclass::text LIKE '%%embedding_hnsw_next' ORDER BY 1"
        ).fetchall()
    assert twins == [
        ("facts_embedding_hnsw_next", True),
        ("memories_embedding_hnsw_next", True),
        ("passages_embedding_hnsw_next", True),
    ]

    # the swap: the new model from now on, in this process at once
    while progress.phase == "swap":
        progress = reembed.step(elephant, batch=3, settle_s=0)
    assert progress.phase in ("finish", "done")
    assert (follower.model_name, follower.dim) == (str(small_model), 256)
    request = SearchRequest(query="Maya found her keys in the car.", lanes=LaneSizes(keyword=0))
    hits = search(elephant, TENANT, request, record_access=False).hits
    ranks = {hit.id: hit.ranks.windows for hit in hits}
    assert ranks.get(late.memory_id) == 1, "the new model's query vector meets the note's own"
    while progress.phase != "done":
        progress = reembed.step(elephant, batch=3, settle_s=0)
    assert progress.model == str(small_model) and progress.dim == 256

    # every vector is the new model's, the schema is as if made for it
    assert assert_vectors_of(db, small) > 20
    for table in reembed.TABLES:
        assert "embedding_next" not in columns(db, table)
    with db.admin_connection() as conn:
        meta = conn.execute("SELECT embedding_model, embedding_dim FROM elephant_meta").fetchone()
        leftovers = conn.execute(
            "SELECT to_regclass('elephant_reembed'), to_regprocedure('elephant_reembed_reset()')"
        ).fetchone()
        not_null = conn.execute(
            "SELECT attnotnull FROM pg_attribute WHERE attrelid = 'passages'::regclass "
            "AND attname = 'embedding'"
        ).fetchone()
    assert meta == (str(small_model), 256)
    assert leftovers == (None, None)
    assert not_null == (True,)
    for query in QUERIES:
        assert hit_ids(elephant, query), f"{query!r} finds nothing after the swap"
    assert reembed.status(elephant).phase == "idle"


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s} s")
        time.sleep(0.05)


CHILD = """
import json, sys
from app.config import EmbeddingSettings, Settings
from app.db import Database
from app.providers.embedder import LocalEmbedder
from app.services.ops import reembed
from app.services.runtime import Elephant

url, data_dir, small_dir, pause_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
settings = Settings.model_validate({"data_dir": data_dir, "database": {"url": url}})
db = Database(settings)
db.open(migrate_schema=False)
elephant = Elephant(settings=settings, db=db, embedder=LocalEmbedder(EmbeddingSettings()), llm=None)
small = LocalEmbedder(EmbeddingSettings(model=small_dir, dim=256))


class Pausing:
    # the target model, which stops (to be killed) in its call number pause_after + 1:
    # that batch was read and is being embedded, its vectors not stored
    model_name, dim, calls = small.model_name, small.dim, 0

    def embed_documents(self, texts):
        Pausing.calls += 1
        if Pausing.calls > pause_after:
            print("paused", flush=True)
            sys.stdin.read()
        return small.embed_documents(texts)

    def embed_document_sums(self, texts):
        # windows are pooled from their turns (app/services/memory/window_vectors.py)
        Pausing.calls += 1
        if Pausing.calls > pause_after:
            print("paused", flush=True)
            sys.stdin.read()
        return small.embed_document_sums(texts)

    embed_queries = embed_documents


target = reembed.status(elephant, count=False).target
reembed._cache_target(target, Pausing())
reembed.run(
    elephant, batch=2, settle_s=0,
    progress=lambda s: print(json.dumps([s.phase, s.vectors_written]), flush=True),
)
print("finished", flush=True)
"""


@pytest.fixture(scope="module")
def second(
    pg_server: EmbeddedPostgres, pg_data_dir: Path, new_database: Callable[..., str]
) -> Iterator[tuple[Settings, Database, str]]:
    """A database of its own for the kill test, and its URL for the child process."""
    name = new_database("reembed_kill")
    settings = make_settings(pg_data_dir, embedded={"database": name})
    db = Database(settings)
    db.open()
    parts = conninfo_to_dict(pg_server.conninfo(dbname=name))
    query = urlencode({key: value for key, value in parts.items() if key != "dbname"})
    yield settings, db, f"postgresql:///{name}?{query}"
    db.close()


def test_a_killed_reembed_resumes_where_it_stopped(
    second: tuple[Settings, Database, str],
    pg_data_dir: Path,
    embedder: Embedder,
    small: Embedder,
    small_model: Path,
) -> None:
    settings, db, url = second
    elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    seed(elephant, TENANT)
    total = reembed.start(elephant, str(small_model)).rows
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(pg_data_dir), str(small_model), "3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    written = 0
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + 240
        for line in child.stdout:  # ends when the child exits
            if line.strip() == "paused":
                break
            phase, written = json.loads(line)
            assert phase == "backfill"
            assert time.monotonic() < deadline, "the child re-embeds too slowly"
        else:
            pytest.fail(f"the child exited ({child.wait()}) without pausing")
        child.send_signal(signal.SIGKILL)  # mid-batch: read, being embedded, not stored
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert written > 0, "three batches were stored before the kill"

    after_kill = reembed.status(elephant)
    assert after_kill.phase == "backfill"
    assert after_kill.vectors_written == written == after_kill.embedded
    # resumed here (not from the start): every row is embedded exactly once
    progress = after_kill
    while progress.phase in ("backfill", "catchup"):
        progress = reembed.step(elephant, batch=2, wait=True)
    counted = reembed.status(elephant)
    assert counted.vectors_written == total == counted.embedded == counted.rows
    assert assert_vectors_of(db, small, "embedding_next") == total
    done = reembed.run(elephant, batch=2, settle_s=0)
    assert done.phase == "done" and done.dim == 256
    assert assert_vectors_of(db, small) == total


def normalised(dump: str) -> str:
    """A schema dump with each table's columns sorted: a swapped column comes last in
    its table, where a fresh table has it in the middle."""
    blocks = []
    for block in dump.split("\n\n"):
        lines = block.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("CREATE TABLE")]
        if starts:
            first = starts[0] + 1
            last = next(i for i in range(first, len(lines)) if lines[i].startswith(")"))
            lines[first:last] = sorted(line.rstrip(",") for line in lines[first:last])
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def test_after_a_reembed_the_schema_is_a_fresh_one_of_the_new_dimension(
    second: tuple[Settings, Database, str],
    pg_server: EmbeddedPostgres,
    new_database: Callable[..., str],
    small_model: Path,
) -> None:
    """No trace of the re-embed (columns, indexes, trigger, state, constraints), the same
    indexes, comments, grants and NOT NULLs as a database made for the new model."""
    from app.db import migrate as migrations
    from tests.integration.test_schema_parity import assert_same_schema, schema_dump

    settings, db, _ = second
    assert reembed.status(Elephant(settings=settings, db=db, embedder=None, llm=None)).dim == 256  # type: ignore[arg-type]
    fresh = new_database("reembed_fresh", empty=True)
    migrations.upgrade(
        pg_server.conninfo(dbname=fresh),
        migrations.SchemaParams(
            embedding_dim=256,
            embedding_model=str(small_model),
            app_role=settings.database.app_role,
            optional_extensions=settings.database.optional_extensions,
        ),
    )
    expected = normalised(schema_dump(pg_server, fresh))
    with db.admin_connection() as conn:  # tenant graphs (AGE) are data, not schema
        graphs = (
            conn.execute("SELECT name FROM ag_catalog.ag_graph").fetchall()
            if (db.capabilities is not None and db.capabilities.age)
            else []
        )
    exclude = tuple(str(row[0]) for row in graphs)
    actual = normalised(schema_dump(pg_server, settings.embedded.database, exclude=exclude))
    assert "vector(256)" in expected
    assert_same_schema(expected, actual, "a re-embedded database", "a fresh 256-d database")


def test_cancel_before_the_swap_leaves_the_database_as_it_was(
    following: Elephant, db: Database, small_model: Path
) -> None:
    """Runs after the full re-embed: the module's vectors are the small model's now, and a
    runtime configured with MiniLM follows the database (a process started after a swap)."""
    assert (following.embedder.model_name, following.embedder.dim) == (str(small_model), 256)
    before = {table: columns(db, table) for table in reembed.TABLES}
    started = reembed.start(following, DEFAULT_MODEL)
    assert started.target is not None and started.target.dim == 384
    assert reembed.step(following, batch=2).phase == "backfill"
    with pytest.raises(InvalidInput, match="batch"):
        reembed.step(following, batch=0)
    cancelled = reembed.cancel(following)
    assert cancelled.phase == "idle" and (cancelled.model, cancelled.dim) == (str(small_model), 256)
    assert {table: columns(db, table) for table in reembed.TABLES} == before
    with db.admin_connection() as conn:
        row = conn.execute(
            "SELECT to_regclass('elephant_reembed'), to_regprocedure('elephant_reembed_reset()'), "
            "(SELECT count(*) FROM pg_trigger WHERE tgname = 'elephant_reembed_reset')"
        ).fetchone()
    assert row == (None, None, 0)
    assert hit_ids(following, "violin lessons"), "search answers after the cancel"

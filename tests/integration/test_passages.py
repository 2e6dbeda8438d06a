"""Passages: long turns and notes are embedded whole, in parts, and search sees all of them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.services.access.erasure import EraseIn, erase
from app.services.jobs.runner import drain
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.passages import note_passages, spans
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.retrieval.lanes import LaneSizes
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import make_settings, unreachable_embedder

FILLER = (
    "Our sprint planning ran long again because the roadmap review kept getting pushed. "
    "The design team wants another pass on the onboarding screens and the copy for the "
    "pricing page still needs a decision from marketing. "
)
DEEP_FACT = "The spare key to the cabin is hidden under the blue flowerpot next to the woodshed."


def long_answer() -> str:
    """~600 words about work, then one sentence about the cabin key at the very end."""
    return FILLER * 14 + DEEP_FACT


def test_spans_are_whole_sentences_that_cover_every_word() -> None:
    sentences = [f"Sentence {n} has " + " ".join(["word"] * (n % 7 + 3)) + "." for n in range(40)]
    text = " ".join(sentences)
    parts = spans(text, 30)
    assert len(parts) > 5
    pieces = [text[a:b] for a, b in parts]
    assert all(len(piece.split()) <= 30 for piece in pieces)
    assert all(piece.startswith("Sentence") and piece.endswith(".") for piece in pieces)
    assert all(sentence in " ".join(pieces) for sentence in sentences)
    # consecutive parts share their boundary sentence
    assert pieces[1].split(".")[0] in pieces[0]
    long_sentence = " ".join(f"w{n}" for n in range(100))
    assert [len(long_sentence[a:b].split()) for a, b in spans(long_sentence, 30)] == [
        30,
        30,
        30,
        10,
    ]
    assert spans("  short turn ", 160) == [(2, 12)]
    assert spans("   ", 160) == []
    assert note_passages("a short note", 160) == []


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(pg_data_dir, embedded={"database": new_database("passages")})


def commit_cabin_talk(elephant: Elephant, tenant: str) -> str:
    conversation = ConversationIn.model_validate(
        {
            "turns": [
                {"speaker": "Maya", "text": "I lost my car keys at the gym last week.", "id": "k1"},
                {"speaker": "Assistant", "text": "Did you check the lost and found?", "id": "k2"},
                {
                    "speaker": "Maya",
                    "text": "Yes, nothing there. Keys are a nightmare.",
                    "id": "k3",
                },
                {"speaker": "Maya", "text": "Can you recap the project status?", "id": "p1"},
                {"speaker": "Assistant", "text": long_answer(), "id": "p2"},
            ],
            "window_size": 2,
            "stride": 1,
            "force": True,
        }
    )
    result = commit_conversation(elephant, tenant, conversation)
    return result.conversation_id


def windows_rank(elephant: Elephant, tenant: str, query: str) -> int | None:
    request = SearchRequest(
        query=query,
        limit=10,
        lanes=LaneSizes(windows=10, facts=0, keyword=0, graph=0),
        diversify=False,
    )
    hits = search(elephant, tenant, request, record_access=False).hits
    return next((rank for rank, hit in enumerate(hits, 1) if "p2" in hit.source_turn_ids), None)


def test_a_fact_deep_in_a_long_turn_is_found_by_the_dense_lane(
    settings: Settings, elephant: Elephant
) -> None:
    commit_cabin_talk(elephant, "cabin")
    with elephant.db.tenant("cabin") as conn:
        rows = conn.execute(
            "SELECT t.source_turn_id, p.ordinal, p.char_start, p.char_end, t.text "
            "FROM passages AS p JOIN turns AS t ON t.id = p.turn_id ORDER BY t.seq, p.ordinal"
        ).fetchall()
    per_turn = {turn: [r for r in rows if r[0] == turn] for turn in ("k1", "k2", "k3", "p1", "p2")}
    assert [len(per_turn[t]) for t in ("k1", "k2", "k3", "p1")] == [1, 1, 1, 1]
    assert len(per_turn["p2"]) >= 10  # ~560 words in parts of at most 48
    last = per_turn["p2"][-1]
    assert last[4][last[2] : last[3]].endswith(DEEP_FACT)

    query = "where is the spare key to the cabin hidden?"
    with_passages = windows_rank(elephant, "cabin", query)
    whole_only = Elephant(
        settings=settings.model_copy(
            update={"search": settings.search.model_copy(update={"passage_share": 0.0})}
        ),
        db=elephant.db,
        embedder=elephant.embedder,
        llm=None,
    )
    without = windows_rank(whole_only, "cabin", query)
    assert with_passages == 1, "the window holding the long turn should rank first"
    assert without is None or without > 1, "without passages the key talk should win"


def test_long_notes_get_passages_and_short_ones_do_not(elephant: Elephant) -> None:
    short = commit_note(elephant, "notes", NoteIn(text="Maya's cabin is in Ely, Minnesota."))
    long = commit_note(elephant, "notes", NoteIn(text=long_answer(), force=True))
    with elephant.db.tenant("notes") as conn:
        counts = dict(
            conn.execute(
                "SELECT memory_id::text, count(*) FROM passages GROUP BY memory_id"
            ).fetchall()
        )
    assert short.memory_id not in counts
    assert counts[str(long.memory_id)] >= 10
    request = SearchRequest(
        query="where is the spare key to the cabin hidden?",
        lanes=LaneSizes(windows=10, facts=0, keyword=0, graph=0),
    )
    hits = search(elephant, "notes", request, record_access=False).hits
    assert hits[0].id == long.memory_id


def test_passages_stay_in_their_tenant_and_go_with_their_turns(elephant: Elephant) -> None:
    commit_cabin_talk(elephant, "cabin-b")
    with elephant.db.tenant("cabin-b") as conn:
        tenants = conn.execute("SELECT DISTINCT tenant_id FROM passages").fetchall()
        before = conn.execute("SELECT count(*) FROM passages").fetchone()
    assert tenants == [("cabin-b",)]
    report = erase(elephant, "cabin-b", EraseIn(subject="woodshed"))
    with elephant.db.tenant("cabin-b") as conn:
        left = conn.execute(
            "SELECT t.source_turn_id FROM passages AS p JOIN turns AS t ON t.id = p.turn_id"
        ).fetchall()
        orphans = conn.execute(
            "SELECT count(*) FROM passages WHERE turn_id IS NULL AND memory_id IS NULL"
        ).fetchone()
    assert sorted(row[0] for row in left) == ["k1", "k2", "k3", "p1"]
    assert orphans == (0,)
    assert before is not None and report.removed["passages"] == before[0] - 4


def test_turns_stored_while_the_embedder_was_down_get_passages_later(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    dead = unreachable_embedder()
    down = Elephant(settings=settings, db=db, embedder=dead, llm=None)
    commit_cabin_talk(down, "cabin-down")
    with db.tenant("cabin-down") as conn:
        assert conn.execute("SELECT count(*) FROM passages").fetchone() == (0,)
    drain(Elephant(settings=settings, db=db, embedder=embedder, llm=None))
    with db.tenant("cabin-down") as conn:
        missing = conn.execute(
            "SELECT count(*) FROM turns AS t "
            "WHERE NOT EXISTS (SELECT 1 FROM passages AS p WHERE p.turn_id = t.id)"
        ).fetchone()
    assert missing == (0,)


def test_an_upgraded_database_queues_passages_for_its_old_turns(
    pg_data_dir: Path, new_database: Callable[..., str], embedder: Embedder
) -> None:
    settings = make_settings(
        pg_data_dir, embedded={"database": new_database("pre-passages", empty=True)}
    )
    db = Database(settings)
    db.start_server()
    try:
        db.migrate("0006_access_control")
        with psycopg.connect(db.admin_conninfo(), autocommit=True) as conn:
            conn.execute("INSERT INTO tenants (id) VALUES ('old')")
            conversation = conn.execute(
                "INSERT INTO conversations (tenant_id) VALUES ('old') RETURNING id"
            ).fetchone()
            assert conversation is not None
            conn.execute(
                "INSERT INTO turns (tenant_id, conversation_id, seq, speaker, text) "
                "VALUES ('old', %s, 0, 'Maya', %s)",
                (conversation[0], long_answer()),
            )
        db.open()  # migrates to head
        with psycopg.connect(db.admin_conninfo()) as conn:
            forced = conn.execute(
                "SELECT relforcerowsecurity FROM pg_class WHERE relname = 'turns'"
            ).fetchone()
        assert forced == (True,), "the migration must put FORCE back on turns"
        with db.tenant("old") as conn:
            kinds = [row[0] for row in conn.execute("SELECT kind FROM jobs").fetchall()]
        assert kinds == ["embed_memories"]
        drain(Elephant(settings=settings, db=db, embedder=embedder, llm=None))
        with db.tenant("old") as conn:
            count = conn.execute("SELECT count(*) FROM passages").fetchone()
        assert count is not None and count[0] >= 10
    finally:
        db.close()


def test_the_window_text_is_what_the_passages_render(elephant: Elephant) -> None:
    """A passage is embedded under its turn's date and speaker, like the window shows it."""
    from app.services.memory.passages import turn_passages
    from app.services.memory.windows import WindowTurn, render_turn

    turn = WindowTurn(0, "Maya", long_answer(), None, "p2")
    parts = turn_passages([turn], 48)
    assert all(p.text.startswith("Maya: ") for p in parts)
    assert render_turn(replace(turn, text=parts[0].text[len("Maya: ") :])) == parts[0].text
    assert re.search("woodshed", parts[-1].text)


def test_a_windows_lane_switched_off_brings_in_no_windows_through_passages(
    elephant: Elephant,
) -> None:
    commit_cabin_talk(elephant, "cabin-off")

    def kinds(windows: int) -> set[str]:
        request = SearchRequest(
            query="where is the spare key to the cabin hidden?",
            lanes=LaneSizes(windows=windows, facts=5, keyword=0, graph=0),
        )
        return {hit.kind for hit in search(elephant, "cabin-off", request).hits}

    assert "window" in kinds(5)
    assert "window" not in kinds(0)

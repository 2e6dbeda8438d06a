"""Entity links of memories (memory_entities, migration 0020): written when a memory's
facts are extracted, typed, kept to the tenant, erased with what they link, carried by
export and import, and rebuilt by the backfill job for memories stored before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from app.config import Settings
from app.services.access.erasure import EraseIn, erase
from app.services.jobs import queue
from app.services.jobs.runner import drain
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.runtime import Elephant
from app.services.transfer.export import export_to_path
from app.services.transfer.importer import import_tenant
from tests.conftest import make_settings

TURNS = [
    ("Caroline", "Hey Mel! I went to Sweden last week with my friend Sarah."),
    ("Melanie", "Sweden sounds lovely! I just started at Google in Seattle."),
    ("Caroline", "Allows me to relax. DELETE the old photos, DEFAULT settings are fine."),
    ("Melanie", "Sarah told me she bought a new Kindle on 3 May 2023."),
]
Links = dict[str, tuple[str, int]]


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(pg_data_dir, embedded={"database": new_database("memory_entities")})


def commit_chat(elephant: Elephant, tenant: str) -> None:
    conversation = ConversationIn.model_validate(
        {
            "turns": [
                {"speaker": s, "text": t, "id": f"T{n}"} for n, (s, t) in enumerate(TURNS, 1)
            ],
            "session_date": "2023-05-08",
            "window_size": 2,
            "stride": 2,
            "force": True,
        }
    )
    commit_conversation(elephant, tenant, conversation, wait=True)
    note = NoteIn(text="Priya moved to Lisbon and joined the University of Lisbon.", force=True)
    commit_note(elephant, tenant, note, wait=True)


def links(elephant: Elephant, tenant: str) -> dict[str, Links]:
    """Memory text's first words -> {entity key: (type, mentions)}."""
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            "SELECT left(m.text, 60), e.entity_key, e.entity_type, e.mentions "
            "FROM memory_entities AS e JOIN memories AS m ON m.id = e.memory_id "
            "WHERE e.tenant_id = %s",
            (tenant,),
        ).fetchall()
    found: dict[str, Links] = {}
    for text, key, kind, mentions in rows:
        found.setdefault(str(text), {})[str(key)] = (str(kind), int(mentions))
    return found


def keys_of(found: dict[str, Links]) -> dict[str, str]:
    return {key: kind for memory in found.values() for key, (kind, _) in memory.items()}


def test_ingest_links_every_window_and_note_to_the_typed_entities_it_names(
    elephant: Elephant,
) -> None:
    commit_chat(elephant, "ent-a")
    found = links(elephant, "ent-a")
    assert len(found) == 3, found  # two windows and the note
    assert keys_of(found) == {
        "melanie": "person",  # "Mel", a speaker's nickname; a speaker's label is no link
        "sweden": "place",
        "sarah": "person",
        "google": "organization",
        "seattle": "place",
        "kindle": "product",
        "3 may 2023": "date",
        "1 may 2023": "date",  # "last week", said on 8 May 2023
        "priya": "person",
        "lisbon": "place",
        "university of lisbon": "organization",
    }
    first = next(v for k, v in found.items() if "Sweden last week" in k)
    assert first["sweden"] == ("place", 2)  # named in both turns of the window
    with elephant.db.tenant("ent-a") as conn:
        counted = conn.execute(
            "SELECT memories, facts, mentions, entity_type FROM entity_mentions "
            "WHERE tenant_id = %s AND entity_key = 'sweden'",
            ("ent-a",),
        ).fetchone()
    assert counted is not None and counted[0] == 1 and counted[3] == "place"
    assert counted[2] == counted[0] + counted[1]


def test_a_tenant_sees_and_writes_only_its_own_links(elephant: Elephant) -> None:
    commit_chat(elephant, "ent-b")
    with elephant.db.tenant("ent-c") as conn:
        assert conn.execute("SELECT count(*) FROM memory_entities").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM entity_mentions").fetchone() == (0,)
    with elephant.db.tenant("ent-b") as conn:
        memory = conn.execute("SELECT memory_id FROM memory_entities LIMIT 1").fetchone()
    assert memory is not None
    with pytest.raises(psycopg.errors.InsufficientPrivilege), elephant.db.tenant("ent-c") as conn:
        conn.execute(
            "INSERT INTO memory_entities (tenant_id, memory_id, entity_key, name, entity_type) "
            "VALUES ('ent-b', %s, 'x', 'X', 'thing')",
            (memory[0],),
        )


def test_erasure_takes_the_links_of_what_it_erases(elephant: Elephant) -> None:
    commit_chat(elephant, "ent-d")
    report = erase(elephant, "ent-d", EraseIn(subject="Priya"))
    assert report.removed["memory_entities"] == 3  # the note's links
    assert "priya" not in keys_of(links(elephant, "ent-d"))
    assert "sweden" in keys_of(links(elephant, "ent-d"))
    erase(elephant, "ent-d", EraseIn(tenant=True))
    with elephant.db.admin_connection() as conn:
        assert conn.execute(
            "SELECT count(*) FROM memory_entities WHERE tenant_id = 'ent-d'"
        ).fetchone() == (0,)


def test_export_and_import_carry_the_links(elephant: Elephant, tmp_path: Path) -> None:
    commit_chat(elephant, "ent-e")
    path = tmp_path / "e.jsonl"
    exported = export_to_path(elephant, "ent-e", path)
    assert exported.counts["memory_entities"] > 0
    import_tenant(elephant, path, "ent-f", new_ids=True)
    assert links(elephant, "ent-f") == links(elephant, "ent-e")
    with elephant.db.tenant("ent-f") as conn:
        dangling = conn.execute(
            "SELECT count(*) FROM memory_entities AS e WHERE NOT EXISTS "
            "(SELECT 1 FROM memories AS m WHERE m.id = e.memory_id AND m.tenant_id = 'ent-f')"
        ).fetchone()
    assert dangling == (0,)


def test_the_backfill_links_memories_stored_before(elephant: Elephant) -> None:
    commit_chat(elephant, "ent-g")
    before = links(elephant, "ent-g")
    with elephant.db.tenant("ent-g") as conn:
        conn.execute("DELETE FROM memory_entities")
        queue.enqueue(conn, "ent-g", "link_entities", {}, max_attempts=3)
    assert links(elephant, "ent-g") == {}
    drain(elephant)
    assert links(elephant, "ent-g") == before


def test_a_name_the_tenant_typed_before_keeps_its_type(elephant: Elephant) -> None:
    first = NoteIn(text="I had lunch with my friend Zorbo near the harbour.", force=True)
    commit_note(elephant, "ent-h", first, wait=True)
    later = NoteIn(text="Zorbo, the best cook in town, opened a stall.", force=True)
    commit_note(elephant, "ent-h", later, wait=True)
    found = links(elephant, "ent-h")
    assert [memory["zorbo"] for memory in found.values()] == [("person", 1), ("person", 1)]
    # the same text in a tenant that never met Zorbo: no name, as nothing says it is one
    commit_note(elephant, "ent-i", later, wait=True)
    assert "zorbo" not in keys_of(links(elephant, "ent-i"))

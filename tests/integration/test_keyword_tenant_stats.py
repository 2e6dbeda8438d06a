"""Keyword ranking from the tenant's own rows (issue 40, attack item 5).

pg_textsearch's bm25 index keeps one set of statistics (document frequency, average
length) for the whole table, so a word's score for tenant A's own note, and the order of
A's keyword results, told A which words other tenants use. The keyword lane now scores
its candidates with A's own statistics, and analysts cannot call the BM25 scoring at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from app.services.access.analysts import analyst_group
from app.services.retrieval.lanes import LaneSizes
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import needs_bm25

A, B = "kw-stats-a", "kw-stats-b"
QUERY = "glimmerqx harborqx"
# A's notes: glimmerqx is in two of them, harborqx in one, so by A's own statistics
# harborqx is the rarer word and its note ranks first; n1 and n3 then tie (same length).
A_NOTES = ("glimmerqx lanternqx", "harborqx lanternqx", "glimmerqx pebbleqx")
OTHERS = 30  # B's notes holding one of the two words


def _insert(elephant: Elephant, tenant: str, texts: list[str]) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in texts]
    with elephant.db.admin_connection() as conn:
        conn.execute("INSERT INTO tenants (id) VALUES (%s) ON CONFLICT DO NOTHING", (tenant,))
        for id_, text in zip(ids, texts, strict=True):
            conn.execute(
                "INSERT INTO memories (id, tenant_id, kind, text, content_hash) "
                "VALUES (%s, %s, 'note', %s, %s)",
                (id_, tenant, text, f"{tenant}-{id_}"),
            )
    return ids


def _clear(elephant: Elephant, tenant: str) -> None:
    with elephant.db.admin_connection() as conn:
        conn.execute("DELETE FROM memories WHERE tenant_id = %s", (tenant,))


@pytest.fixture
def a_notes(elephant: Elephant) -> Iterator[list[str]]:
    ids = _insert(elephant, A, list(A_NOTES))
    yield ids
    _clear(elephant, A)
    _clear(elephant, B)


def _keyword_order(elephant: Elephant) -> list[str]:
    """A's keyword-lane results for QUERY, best first (the keyword lane alone)."""
    lanes = LaneSizes(windows=0, facts=0, keyword=10, graph=0, preferences=0)
    request = SearchRequest(query=QUERY, limit=10, lanes=lanes, diversify=False)
    result = search(elephant, A, request, record_access=False)
    return [str(hit.id) for hit in result.hits]


@needs_bm25
def test_a_tenants_keyword_order_does_not_depend_on_other_tenants_words(
    elephant: Elephant, a_notes: list[str]
) -> None:
    """A's order for "glimmerqx harborqx" is the same whether B's 30 notes all hold
    glimmerqx or all hold harborqx (or B has none), and it is the order A's own
    statistics give: the note with A's rarer word first."""
    orders = {"none": _keyword_order(elephant)}
    # harborqx first: pg_textsearch keeps counting deleted rows until a vacuum, so B's
    # glimmerqx notes, once written, would go on lowering glimmerqx's weight
    for word in ("harborqx", "glimmerqx"):
        _clear(elephant, B)
        _insert(elephant, B, [f"{word} fillerqx{n}" for n in range(OTHERS)])
        orders[word] = _keyword_order(elephant)
    assert orders["glimmerqx"] == orders["none"] == orders["harborqx"], orders
    n1, n2, n3 = a_notes
    assert orders["none"] == [n2, *sorted([n1, n3])]


@needs_bm25
def test_analysts_cannot_call_the_bm25_scoring(elephant: Elephant) -> None:
    """to_bm25query and the `<@>` operator's functions score any text against a whole
    table's statistics: the analyst group may execute none of pg_textsearch's functions;
    the app role, which searches, keeps the scoring ones, not the maintenance ones."""
    app = elephant.settings.database.app_role
    group = analyst_group(app)
    with elephant.db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT p.oid::regprocedure::text, has_function_privilege(%s, p.oid, 'EXECUTE'), "
            "       has_function_privilege(%s, p.oid, 'EXECUTE') "
            "FROM pg_depend AS d JOIN pg_proc AS p ON d.classid = 'pg_proc'::regclass "
            "                                     AND p.oid = d.objid "
            "JOIN pg_extension AS e ON d.refclassid = 'pg_extension'::regclass "
            "                      AND e.oid = d.refobjid "
            "WHERE e.extname = 'pg_textsearch' AND d.deptype = 'e' "
            "  AND p.proname NOT LIKE '%%\\_in' AND p.proname NOT LIKE '%%\\_out' "
            "  AND p.proname NOT LIKE '%%\\_recv' AND p.proname NOT LIKE '%%\\_send'",
            (group, app),
        ).fetchall()
    assert any(name.startswith("to_bm25query") for name, _, _ in rows), rows
    assert [name for name, analyst, _ in rows if analyst] == []
    app_may = {name for name, _, may in rows if may}
    assert {"to_bm25query(text,text)", "bm25_text_bm25query_score(text,bm25query)"} <= app_may
    assert not app_may & {"bm25_force_merge(text)", "bm25_spill_index(text)"}  # the owner's


@needs_bm25
def test_an_analyst_session_cannot_score_text_against_the_index(elephant: Elephant) -> None:
    """The attack itself: a role in the analyst group scoring a literal."""
    group = analyst_group(elephant.settings.database.app_role)
    with elephant.db.admin_connection() as conn:
        conn.execute("BEGIN")
        try:
            conn.execute(f'SET LOCAL ROLE "{group}"')
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "SELECT 'glimmerqx'::text <@> to_bm25query('glimmerqx', 'memories_text_bm25')"
                )
        finally:
            conn.execute("ROLLBACK")


@needs_bm25
def test_words_with_quotes_and_backslashes_are_counted_not_parsed(
    elephant: Elephant, a_notes: list[str]
) -> None:
    """The tenant's word counts (migration 0019) quote each word as a tsquery: a quote or
    a backslash in a word is part of the word, never syntax; only A's rows count."""
    _insert(elephant, A, ["o'brienqx said", "o'brienqx again"])
    _insert(elephant, B, ["brienqx lanternqx"])
    words = ["it's", "back\\slash", "a'' | b", "brienqx", "lanternqx"]
    with elephant.db.tenant(A) as conn:
        row = conn.execute("SELECT elephant_keyword_frequencies('memories', %s)", (words,))
        counts = row.fetchone()
    assert counts == ([0, 0, 0, 2, 2],)

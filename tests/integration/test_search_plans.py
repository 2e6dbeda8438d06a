"""EXPLAIN proofs: every lane of the hybrid search statement stays on its index.

The tables get a few thousand rows in two tenants (random unit vectors, Zipf-like
words, entity links), so the planner has a real choice between an index and a
scan. Each plan is of the real statement (app.services.retrieval.search.statement) with the
parameters the service builds (statement_params) and its session settings
(prepare), run as the app role inside a tenant, i.e. under row-level security.
The plan tree is walked for the index each lane must use.

The tsvector keyword lane reads through two SECURITY DEFINER functions (migration
0009), whose plans EXPLAIN does not show: the statement is also run, and the index
scans the transaction made (pg_stat_get_xact_numscans) count as used. Their own
plans, as their owner, are checked below, and so are their rows (those of the plain
query before 0009) and their isolation.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from app.db.resources import fragment, load_sql, splice
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import prepare, statement, statement_params
from app.services.runtime import Elephant
from tests.conftest import needs_bm25

T = "planner"
OTHER = "bystander"
ROWS = {T: 2500, OTHER: 1000}  # memories per tenant; as many facts
ENTITIES = 120
WORDS = 600
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
NAMED, NEIGHBOURS = ["entity-3"], ["entity-7", "entity-11"]

FILTERS: dict[str, dict[str, Any]] = {
    "no filters": {},
    "every filter": {
        "source": ["chat", "api"],
        "kind": ["note", "fact"],
        "created_after": "2024-01-15",
        "created_before": "2024-12-01",
        "event_after": "2024-02-01",
        "event_before": "2024-11-01",
        "as_of": "2024-06-01",
    },
    "include_expired": {"include_expired": True, "source": "chat"},
}
KEYWORD_FUNCTIONS = {"memories": "elephant_keyword_memories", "facts": "elephant_keyword_facts"}
KEYWORD_ROLE = "elephant_app_keyword"  # <app role>_keyword (migration 0009)


def lane(engine: str, index: str, id_: str) -> Any:
    """A (engine, index) case; the bm25 engine's need pg_textsearch (not in managed mode)."""
    return pytest.param(engine, index, id=id_, marks=[needs_bm25] if engine == "bm25" else [])


LANES = [
    lane("bm25", "memories_embedding_hnsw", "windows-hnsw"),
    lane("bm25", "facts_embedding_hnsw", "facts-hnsw"),
    lane("bm25", "memories_text_bm25", "keyword-memories-bm25"),
    lane("bm25", "facts_text_bm25", "keyword-facts-bm25"),
    lane("bm25", "fact_entities_entity", "graph-fact_entities"),
    lane("bm25", "passages_embedding_hnsw", "passages-hnsw"),
    lane("bm25", "facts_preferences_hnsw", "preferences-hnsw"),
    lane("tsvector", "memories_embedding_hnsw", "tsvector-windows-hnsw"),
    lane("tsvector", "facts_embedding_hnsw", "tsvector-facts-hnsw"),
    lane("tsvector", "fact_entities_entity", "tsvector-graph-fact_entities"),
    lane("tsvector", "passages_embedding_hnsw", "tsvector-passages-hnsw"),
    lane("tsvector", "facts_preferences_hnsw", "tsvector-preferences-hnsw"),
    lane("tsvector", "memories_tsv_gin", "keyword-memories-gin"),
    lane("tsvector", "facts_tsv_gin", "keyword-facts-gin"),
]


def unit_vector(rng: random.Random, dim: int) -> list[float]:
    values = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def vector_text(values: list[float]) -> str:
    return "[" + ",".join(f"{v:.6f}" for v in values) + "]"


def sentence(rng: random.Random, words: list[str], length: int) -> str:
    # Zipf-like: low word indices are common, high ones rare (what a query names).
    picked = [words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(length)]
    return " ".join(picked).capitalize() + "."


def seed_tenant(elephant: Elephant, tenant: str, count: int, rng: random.Random) -> None:
    dim = elephant.settings.embedding.dim
    words = [f"w{n}x" for n in range(WORDS)]
    memories, facts, links, passages = [], [], [], []
    for n in range(count):
        memory_id, fact_id = uuid.uuid4(), uuid.uuid4()
        created = EPOCH + timedelta(hours=n * 3)
        event = created - timedelta(days=1)
        memories.append(
            (
                memory_id,
                tenant,
                "window" if n % 3 else "note",
                sentence(rng, words, 40),
                vector_text(unit_vector(rng, dim)),
                ("chat", "api", "vet")[n % 3],
                event,
                f"m{n}",
                created,
            )
        )
        if n % 3 == 0:  # a long note: two passages
            for ordinal in range(2):
                vector = vector_text(unit_vector(rng, dim))
                passages.append(
                    (tenant, memory_id, ordinal, ordinal * 100, ordinal * 100 + 150, vector)
                )
        status = "superseded" if n % 10 == 0 else "active"
        facts.append(
            (
                fact_id,
                tenant,
                memory_id,
                sentence(rng, words, 12),
                vector_text(unit_vector(rng, dim)),
                event,
                event + timedelta(days=90) if status == "superseded" else None,
                status,
                created,
                created + timedelta(days=1) if status == "superseded" else None,
                ("chat", "api", "vet")[n % 3],
                f"f{n}",
                created,
                "preference" if n % 50 == 0 else "world",
            )
        )
        for key in {rng.randrange(ENTITIES), rng.randrange(ENTITIES)}:
            links.append((tenant, fact_id, f"entity-{key}", "mentions"))
    # As the superuser: COPY does not run under row-level security.
    with elephant.db.admin_connection() as conn:
        conn.execute("INSERT INTO tenants (id) VALUES (%s) ON CONFLICT DO NOTHING", (tenant,))
        copies = {
            "memories": "id, tenant_id, kind, text, embedding, source, event_at, content_hash, "
            "created_at",
            "facts": "id, tenant_id, memory_id, text, embedding, valid_from, valid_to, status, "
            "recorded_at, expired_at, source, content_hash, created_at, fact_type",
            "fact_entities": "tenant_id, fact_id, entity_key, link",
            "passages": "tenant_id, memory_id, ordinal, char_start, char_end, embedding",
        }
        tables = {
            "memories": memories,
            "facts": facts,
            "fact_entities": links,
            "passages": passages,
        }
        for table, rows in tables.items():
            query = f"COPY {table} ({copies[table]}) FROM STDIN"
            with conn.cursor() as cursor, cursor.copy(query) as copy:
                for row in rows:
                    copy.write_row(row)


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    rng = random.Random(15)
    for tenant, count in ROWS.items():
        seed_tenant(elephant, tenant, count, rng)
    with elephant.db.admin_connection() as conn:
        # VACUUM as autovacuum would after a bulk insert: it also moves the GIN indexes'
        # pending lists (fastupdate) into the index proper, which the planner costs.
        conn.execute("VACUUM ANALYZE memories, facts, fact_entities, passages")
    return elephant


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


INDEX_SCANS = (
    "SELECT c.relname, pg_stat_get_xact_numscans(c.oid) FROM pg_class AS c "
    "JOIN pg_index AS i ON i.indexrelid = c.oid "
    "WHERE i.indrelid IN ('memories'::regclass, 'facts'::regclass)"
)


def index_scans(conn: Any) -> dict[str, int]:
    """Index scans on memories and facts so far in this transaction, per index."""
    return {str(name): int(count) for name, count in conn.execute(INDEX_SCANS).fetchall()}


@pytest.fixture(scope="module")
def indexes_used(seeded: Elephant) -> Callable[[str, str], set[str]]:
    """Index names in the plan of the real statement, per (engine, filter set), and those
    of memories and facts that running it scanned (inside the keyword functions too)."""
    plans: dict[tuple[str, str], set[str]] = {}
    rng = random.Random(7)
    dim = seeded.settings.embedding.dim
    variants = ["w40x w41x Entity-7 story", "w40x w41x"]
    vectors = [np.array(unit_vector(rng, dim), dtype=np.float32) for _ in variants]

    def used(engine: str, filters: str) -> set[str]:
        if (engine, filters) not in plans:
            request = SearchRequest(query=variants[0], filters=FILTERS[filters])
            params = statement_params(
                seeded,
                request,
                variants,
                vectors,
                engine,
                tenant=T,
                way="shared",
                graph=(NAMED, NEIGHBOURS),
            )
            assert params["graph"] > 0 and params["windows"] > 0 and params["facts"] > 0
            with seeded.db.tenant(T) as conn:
                prepare(conn, seeded, max(params["windows"], params["facts"]))
                row = conn.execute("EXPLAIN (FORMAT JSON) " + statement(engine), params).fetchone()
                before = index_scans(conn)
                conn.execute(statement(engine), params).fetchall()
                after = index_scans(conn)
            assert row is not None
            nodes = list(plan_nodes(row[0][0]["Plan"]))
            names = {str(n["Index Name"]) for n in nodes if "Index Name" in n}
            if engine == "tsvector":  # the keyword lane is a call, its index scans within
                called = {str(n.get("Function Name")) for n in nodes}
                assert set(KEYWORD_FUNCTIONS.values()) <= called, sorted(called)
                names |= {name for name, count in after.items() if count > before.get(name, 0)}
            plans[engine, filters] = names
        return plans[engine, filters]

    return used


@pytest.mark.parametrize("filters", list(FILTERS))
@pytest.mark.parametrize(("engine", "index"), LANES)
def test_every_lane_uses_its_index(
    indexes_used: Callable[[str, str], set[str]], engine: str, index: str, filters: str
) -> None:
    used = indexes_used(engine, filters)
    assert index in used, f"{index} not in the plan ({engine}, {filters}): {sorted(used)}"


def test_the_seeded_tenant_sees_only_its_rows(seeded: Elephant) -> None:
    """The plans above run under row-level security, over one tenant of two."""
    with seeded.db.tenant(T) as conn:
        row = conn.execute("SELECT count(*), count(DISTINCT tenant_id) FROM memories").fetchone()
    assert row == (ROWS[T], 1)


def test_activation_is_inlined_into_the_statement_not_called_per_row(seeded: Elephant) -> None:
    """elephant_activation has no SET clause, so the planner inlines its body: the plan
    computes the formula in place (ln, power) and names no function call per fused row."""
    rng = random.Random(3)
    variants = ["w40x w41x"]
    vectors = [np.array(unit_vector(rng, seeded.settings.embedding.dim), dtype=np.float32)]
    engine = "bm25" if seeded.db.capabilities and seeded.db.capabilities.textsearch else "tsvector"
    params = statement_params(
        seeded, SearchRequest(query=variants[0]), variants, vectors, engine, tenant=T, way="shared"
    )
    with seeded.db.tenant(T) as conn:
        prepare(conn, seeded, max(params["windows"], params["facts"]))
        plan = "\n".join(
            str(row[0])
            for row in conn.execute("EXPLAIN (VERBOSE) " + statement(engine), params).fetchall()
        )
        config = conn.execute(
            "SELECT proconfig FROM pg_proc WHERE proname = 'elephant_activation'"
        ).fetchone()
    assert config == (None,)
    assert "elephant_activation" not in plan
    assert "ln(" in plan and "power(" in plan, "the activation formula is not in the plan"


@pytest.mark.parametrize("engine", ["bm25", "tsvector"])
def test_each_filter_is_written_once_and_spliced_into_every_lane(engine: str) -> None:
    text = statement(engine)
    assert not [line for line in text.splitlines() if line.strip().startswith("{")]
    # windows (nearest windows by index and exactly, windows of near turns, long notes of
    # near passages) + keyword memories + windows of found facts + the entity expansion,
    # entity match and neighbour lanes' memories; facts (index, exact) + keyword facts +
    # graph_facts + preferences (index, exact) + the entity expansion, entity match and
    # timeline lanes' facts
    assert text.count(fragment("retrieval/memory_filters.sql").splitlines()[0]) == 9
    assert text.count("WHEN %(include_expired)s THEN true") == 9
    for name in ("memory_filters.sql", "fact_filters.sql", "hybrid_search.sql"):
        assert load_sql(f"retrieval/{name}").count("WHEN %(include_expired)s THEN true") == (
            1 if name == "fact_filters.sql" else 0
        )
    assert "-- Filters on facts" not in text  # a fragment's header stays in its file


def test_a_slot_takes_its_fragment_indented_like_the_slot() -> None:
    spliced = splice("WHERE true\n    {memory_filters}\nLIMIT 1", "retrieval")
    lines = spliced.splitlines()
    assert lines[0] == "WHERE true" and lines[-1] == "LIMIT 1"
    assert all(line.startswith("    AND (") for line in lines[1:-1]), spliced
    with pytest.raises(FileNotFoundError):
        splice("  {no_such_fragment}")


@pytest.mark.parametrize("engine", ["bm25", "tsvector"])
def test_the_service_builds_every_parameter_the_statement_names(
    elephant: Elephant, engine: str
) -> None:
    named = set(re.findall(r"%\((\w+)\)[sb]", statement(engine)))
    request = SearchRequest(query="anything")
    params = statement_params(elephant, request, ["anything"], [[0.0]], engine, tenant=T)
    # way and keyword_statistics pick the statement's text (run_statement)
    assert set(params) - {"way", "keyword_statistics"} == named
    header = load_sql("retrieval/hybrid_search.sql").split("WITH q AS (")[0]
    assert [name for name in sorted(named) if name not in header] == []  # all documented


# ---------------------------------------------------------------- the keyword lane under RLS

# sql/retrieval/keyword_tsvector.sql before migration 0009: the tenant's rows matched in place, which
# under row-level security filters a scan of them. The lane must return what it returned.
PLAIN_KEYWORD_LANE = """\
    SELECT q.variant, hit.item, hit.id, hit.rank
    FROM q
    CROSS JOIN LATERAL (
        SELECT 'memory'::text AS item, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id) AS rank
        FROM (
            SELECT m.id, ts_rank_cd(m.tsv, websearch_to_tsquery('english', q.query)) AS score
            FROM memories AS m
            WHERE true
              {memory_filters}
              AND m.tsv @@ websearch_to_tsquery('english', q.query)
            ORDER BY score DESC, m.id
            LIMIT %(keyword_memories)s
        ) AS ranked
        UNION ALL
        SELECT 'fact'::text, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id)
        FROM (
            SELECT f.id, ts_rank_cd(f.tsv, websearch_to_tsquery('english', q.query)) AS score
            FROM facts AS f
            WHERE true
              {fact_filters}
              AND f.tsv @@ websearch_to_tsquery('english', q.query)
            ORDER BY score DESC, f.id
            LIMIT %(keyword_facts)s
        ) AS ranked
    ) AS hit"""
KEYWORD_SLOT = re.compile(r"^[ \t]*\{keyword_lane\}[ \t]*$", re.MULTILINE)
LANE_ONLY = """\
WITH q AS (
    SELECT v.query, v.variant FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS v(query, variant)
)
SELECT variant, item, id, rank FROM (
{keyword_lane}
) AS lane
ORDER BY variant, item, rank"""
QUESTIONS = [
    ["w40x w41x Entity-7 story", "w40x w41x"],  # rare words, two variants
    ["w1x w2x"],  # the commonest words: most rows match
    ["w3x or w250x", "-w1x w5x"],  # websearch syntax: OR, negation
    ["w599x nothing-matches-this"],
]


def plain_statement() -> str:
    """The search statement as it was before 0009: the plain keyword lane spliced in."""
    text = load_sql("retrieval/hybrid_search.sql")
    assert KEYWORD_SLOT.search(text), "hybrid_search.sql has no {keyword_lane} slot"
    return splice(KEYWORD_SLOT.sub(lambda _: PLAIN_KEYWORD_LANE, text), "retrieval")


def keyword_params(elephant: Elephant, variants: list[str], filters: str) -> dict[str, Any]:
    rng = random.Random(3)
    dim = elephant.settings.embedding.dim
    vectors = [np.array(unit_vector(rng, dim), dtype=np.float32) for _ in variants]
    request = SearchRequest(query=variants[0], filters=FILTERS[filters])
    params = statement_params(elephant, request, variants, vectors, "tsvector", tenant=T)
    params["keyword_memories"] = params["keyword_facts"] = 25  # deeper than the default 10
    return params


@pytest.mark.parametrize("filters", list(FILTERS))
def test_the_keyword_lane_returns_the_rows_and_ranks_of_the_plain_query(
    seeded: Elephant, filters: str
) -> None:
    """The lane alone and the whole statement, before (plain query) and after (functions)."""
    found = 0
    for variants in QUESTIONS:
        params = keyword_params(seeded, variants, filters)
        with seeded.db.tenant(T) as conn:
            prepare(conn, seeded, max(params["windows"], params["facts"]))
            old_lane = conn.execute(
                splice(LANE_ONLY.replace("{keyword_lane}", PLAIN_KEYWORD_LANE), "retrieval"), params
            ).fetchall()
            new_lane = conn.execute(
                splice(LANE_ONLY, "retrieval", keyword_lane="keyword_tsvector.sql"), params
            ).fetchall()
            old = conn.execute(plain_statement(), params).fetchall()
            new = conn.execute(statement("tsvector"), params).fetchall()
        assert new_lane == old_lane, variants
        assert new == old, variants  # every column: ids, scores, each lane's rank
        found += len(new_lane)
    assert found > 100, "too few keyword hits for the comparison to mean anything"


@pytest.mark.parametrize("table", ["memories", "facts"])
def test_each_keyword_function_uses_its_gin_index_as_its_owner(
    seeded: Elephant, table: str
) -> None:
    """The functions' own plans (their query, its variables as parameters, as plpgsql
    plans it): as their owner (what SECURITY DEFINER runs as) `@@` is the GIN index's
    condition; as the app role the same query cannot use it (issue 15)."""
    function = KEYWORD_FUNCTIONS[table]
    with seeded.db.admin_connection() as conn, conn.transaction():
        row = conn.execute(
            "SELECT prosrc, pg_get_userbyid(proowner), prosecdef FROM pg_proc WHERE proname = %s",
            (function,),
        ).fetchone()
        assert row is not None
        body, owner, definer = row
        assert owner == KEYWORD_ROLE and definer
        found = re.search(r"RETURN QUERY\s+(SELECT .*?);", body, re.DOTALL)
        assert found is not None, body
        query = found[1].replace("p_query", "%(q)s").replace("v_tenant", "%(tenant)s")
        plans = {}
        for role in (KEYWORD_ROLE, seeded.settings.database.app_role):
            conn.execute(f'SET LOCAL ROLE "{role}"')
            conn.execute("SELECT set_config('elephant.tenant_id', %s, true)", (T,))
            explained = conn.execute(
                "EXPLAIN (FORMAT JSON) " + query, {"q": "w40x w41x", "tenant": T}
            ).fetchone()
            assert explained is not None
            plans[role] = list(plan_nodes(explained[0][0]["Plan"]))
    index = f"{table}_tsv_gin"
    scans = [n for n in plans[KEYWORD_ROLE] if n.get("Index Name") == index]
    assert scans and "@@" in str(scans[0].get("Index Cond")), plans[KEYWORD_ROLE]
    assert index not in {n.get("Index Name") for n in plans[seeded.settings.database.app_role]}


def test_the_keyword_functions_return_only_the_tenant_in_the_setting(seeded: Elephant) -> None:
    with seeded.db.admin_connection() as conn:
        expected = {
            tenant: {
                row[0]
                for row in conn.execute(
                    "SELECT id FROM memories WHERE tenant_id = %s "
                    "AND tsv @@ websearch_to_tsquery('english', 'w1x')",
                    (tenant,),
                )
            }
            for tenant in ROWS
        }
    assert expected[T] and expected[OTHER]
    for tenant in ROWS:
        with seeded.db.tenant(tenant) as conn:
            rows = conn.execute("SELECT id FROM elephant_keyword_memories('w1x')").fetchall()
        assert {row[0] for row in rows} == expected[tenant]
    with seeded.db.connection() as conn:  # no tenant in the session: nothing
        count = conn.execute("SELECT count(*) FROM elephant_keyword_facts('w1x')").fetchone()
        conn.rollback()
    assert count == (0,)


def test_the_keyword_role_has_no_other_rights(seeded: Elephant) -> None:
    """It logs in nowhere, bypasses nothing, belongs to nobody, writes nothing, reads only
    the columns the lane ranks and filters by; only the app role may call its functions."""
    app, worker = seeded.settings.database.app_role, seeded.settings.database.worker_role
    with seeded.db.admin_connection() as conn:
        attributes = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin, rolcreaterole, rolcreatedb, rolinherit "
            "FROM pg_roles WHERE rolname = %s",
            (KEYWORD_ROLE,),
        ).fetchone()
        members = conn.execute(
            "SELECT pg_has_role(%s, %s, 'MEMBER'), pg_has_role(%s, %s, 'MEMBER')",
            (app, KEYWORD_ROLE, worker, KEYWORD_ROLE),
        ).fetchone()
        rights = conn.execute(
            "SELECT c.relname, p.privilege FROM pg_class AS c JOIN pg_namespace AS n "
            "ON n.oid = c.relnamespace CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', "
            "'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS p(privilege) "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'p') "
            "AND has_table_privilege(%s, c.oid, p.privilege)",
            (KEYWORD_ROLE,),
        ).fetchall()
        readable = conn.execute(
            "SELECT attrelid::regclass::text, attname FROM pg_attribute "
            "WHERE attrelid IN ('memories'::regclass, 'facts'::regclass) AND attnum > 0 "
            "AND NOT attisdropped AND has_column_privilege(%s, attrelid, attnum, 'SELECT')",
            (KEYWORD_ROLE,),
        ).fetchall()
        schema = conn.execute(
            "SELECT has_schema_privilege(%s, 'public', 'USAGE'), "
            "has_schema_privilege(%s, 'public', 'CREATE')",
            (KEYWORD_ROLE, KEYWORD_ROLE),
        ).fetchone()
        callers = conn.execute(
            "SELECT r.rolname, p.proname FROM pg_proc AS p CROSS JOIN pg_roles AS r "
            "WHERE p.proname = ANY (%s) AND r.rolname = ANY (%s) "
            "AND has_function_privilege(r.oid, p.oid, 'EXECUTE')",
            (list(KEYWORD_FUNCTIONS.values()), [app, worker, KEYWORD_ROLE]),
        ).fetchall()
    assert attributes == (False, False, False, False, False, False)
    assert members == (False, False)
    assert rights == []  # no table-wide right anywhere
    assert schema == (True, False)
    assert {column for table, column in readable if table == "memories"} == {
        "id", "tenant_id", "tsv", "kind", "source", "created_at", "event_at",
        "superseded_at", "item_namespace", "item_key", "item_value",  # store items (0016)
    }  # fmt: skip
    assert "text" not in {column for _, column in readable}
    assert "embedding" not in {column for _, column in readable}
    assert {role for role, _ in callers} == {app, KEYWORD_ROLE}  # the owner, and the app
    with seeded.db.tenant(T) as conn, pytest.raises(Exception, match="permission denied"):
        conn.execute(f'SET ROLE "{KEYWORD_ROLE}"')


@needs_bm25
def test_the_bm25_lane_finds_a_small_tenants_rows_below_another_tenants(
    seeded: Elephant,
) -> None:
    """The bm25 index is an ordered scan of every tenant's documents that row-level
    security then filters: a tenant whose matches all rank below another tenant's (here
    T's 2,500 rows hold `w0x`, the commonest word) must still get its own, in order."""
    tenant = "tiny"
    with seeded.db.admin_connection() as conn:
        conn.execute("INSERT INTO tenants (id) VALUES (%s) ON CONFLICT DO NOTHING", (tenant,))
        for n in range(6):
            text = f"w0x {' '.join(f'filler{k}' for k in range(n * 20 + 40))}"  # long: low scores
            conn.execute(
                "INSERT INTO memories (tenant_id, kind, text, content_hash) "
                "VALUES (%s, 'note', %s, %s)",
                (tenant, text, f"tiny{n}"),
            )
    query = (
        "SELECT id, text <@> to_bm25query(%s, 'memories_text_bm25') AS score FROM memories "
        "ORDER BY score, id LIMIT 5"
    )
    with seeded.db.tenant(tenant) as conn:
        prepare(conn, seeded, 40)  # enable_sort off, as the search statement runs
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + query, ("w0x",)).fetchone()
        hits = conn.execute(query, ("w0x",)).fetchall()
        conn.execute("SELECT set_config('enable_indexscan', 'off', true)")
        conn.execute("SELECT set_config('enable_sort', 'on', true)")
        sorted_hits = conn.execute(query, ("w0x",)).fetchall()
    assert plan is not None
    assert "memories_text_bm25" in {n.get("Index Name") for n in plan_nodes(plan[0][0]["Plan"])}
    assert len(hits) == 5 and hits == sorted_hits

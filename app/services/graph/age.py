"""The graph in Apache AGE: one graph per tenant, entities as vertices, relations as edges.

Every Cypher text here is a constant of this module; values travel in the
third argument of ``cypher()`` as one JSON map. The SQL statements (the reads that go
to AGE's label tables directly, and provisioning) are sql/graph/age_*.sql. The only
things spliced into a statement are the graph name, derived from the (validated) tenant id, and edge
labels taken from the closed relation vocabulary, never from a caller's string.
Vertices are found through ``{key: ...}`` patterns, which AGE turns into a
``properties @>`` test that the GIN index on the label table answers; edges
are walked one direction at a time, which the start/end indexes answer (an
undirected pattern becomes an OR join that scans every edge).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from app.db import lock_waits
from app.db.resources import fragment
from app.db.runtime import Connection, Database
from app.errors import CapabilityMissing
from app.protocol import JSONObject
from app.services.graph.store import Entity, GraphCounts, Relation, Triple, Walk
from app.services.graph.vocabulary import RELATIONS
from app.services.graph.walk import walk_by_hops

log = logging.getLogger(__name__)

ENTITY_LABEL = "Entity"
# Also an agtype literal: its input function loads AGE's library into a session that has
# not loaded it (no preload, no LOAD 'age'), and with it the parser hook the next statement's
# cypher() needs. A role that logs in itself (behind a transaction pooler) may not run LOAD.
AGE_SEARCH_PATH = (
    "SELECT set_config('search_path', '\"$user\", public, ag_catalog', true), "
    "'null'::ag_catalog.agtype"
)
_GRAPH_NAME = re.compile(r"^g_[a-z0-9_]{1,40}_[0-9a-f]{8}$")


def graph_name(tenant: str) -> str:
    """Readable and collision-free: 'team-a' and 'team_a' differ by the hash suffix."""
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:8]
    return f"g_{tenant.replace('-', '_')[:40]}_{digest}"


def _statement(name: str) -> str:
    """``sql/graph/age_<name>.sql``: the SQL statements of this store, each documented there."""
    return fragment(f"graph/age_{name}.sql")


def _vertices(tenant: str) -> sql.Identifier:
    """The tenant graph's Entity label table (every vertex)."""
    return sql.Identifier(graph_name(tenant), ENTITY_LABEL)


def _edges(tenant: str) -> sql.Identifier:
    """The tenant graph's parent edge table (every edge, whatever its label)."""
    return sql.Identifier(graph_name(tenant), "_ag_label_edge")


def _decode(value: Any) -> Any:
    if value is None or not isinstance(value, str):
        return value
    return json.loads(value)


def _label(relation_type: str) -> sql.Identifier:
    if relation_type not in RELATIONS:  # the vocabulary folded it already; belt and braces
        raise ValueError(f"not a relation type: {relation_type!r}")
    return sql.Identifier(relation_type)


def cypher_statement(
    tenant: str, query: str, columns: Sequence[str] = ("r",), *, label: str | None = None
) -> sql.Composed:
    """``SELECT * FROM cypher(graph, $cypher$query$cypher$, %s)``: the one place text is
    spliced into a graph statement, so each spliced piece is checked here (and the checks
    raise, never ``assert``: they must hold under ``python -O`` too)."""
    graph = graph_name(tenant)
    if not _GRAPH_NAME.match(graph):
        raise ValueError(f"graph name {graph!r} of tenant {tenant!r} is not safe to splice")
    if label is not None:
        _label(label)
    cypher_text = query if label is None else query.replace("<LABEL>", label)
    # AGE wants the query as a dollar-quoted constant; the text is ours, never a caller's.
    if "$cypher$" in cypher_text or "%" in cypher_text:
        raise ValueError(f"Cypher text may not contain '$cypher$' or '%': {cypher_text!r}")
    return sql.SQL(_statement("cypher")).format(
        graph=sql.Literal(graph),
        query=sql.SQL(cypher_text),
        cols=sql.SQL(", ").join(
            sql.SQL("{} ag_catalog.agtype").format(sql.Identifier(column)) for column in columns
        ),
    )


class AGEGraphStore:
    backend = "age"

    def __init__(self, db: Database) -> None:
        self.db = db
        self._ready: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------ plumbing

    def _run(
        self,
        conn: Connection,
        tenant: str,
        query: str,
        params: JSONObject,
        columns: Sequence[str] = ("r",),
        *,
        label: str | None = None,
    ) -> list[tuple[Any, ...]]:
        statement = cypher_statement(tenant, query, columns, label=label)
        # AGE resolves the functions its Cypher translates to (age_unnest, ...) through the
        # search path. Pool connections get ag_catalog at configuration; this transaction-
        # local copy makes a Cypher call independent of that (one full-suite CI run once
        # met a pool connection without it: "function age_unnest(agtype) does not exist").
        conn.execute(AGE_SEARCH_PATH)
        rows = conn.execute(statement, (json.dumps(params),)).fetchall()
        return [tuple(_decode(value) for value in row) for row in rows]

    # ------------------------------------------------------------ provisioning

    def exists(self, conn: Connection, tenant: str) -> bool:
        if tenant in self._ready:
            return True
        row = conn.execute("SELECT 1 FROM graphs WHERE tenant_id = %s", (tenant,)).fetchone()
        if row is not None:
            self._ready.add(tenant)  # graphs are only ever dropped with the whole schema
        return row is not None

    def forget(self, tenant: str) -> None:
        """The tenant's graph was dropped (erasure): provision it again on next write."""
        with self._lock:
            self._ready.discard(tenant)

    def ensure(self, tenant: str) -> None:
        """Create the graph, its labels, indexes and grants once; safe under concurrency."""
        if tenant in self._ready:
            return
        self._require_age()
        with self._lock, self.db.admin_connection() as conn, conn.transaction():
            _provision(conn, tenant, self.db.settings.database.app_role, self.db.lock_timeout_ms)
            self._ready.add(tenant)

    def provision(self, conn: Connection, tenant: str) -> None:
        """As ensure, in the caller's migrator transaction; the graph is not remembered as
        ready (the transaction may still roll back): exists() finds its registry row."""
        self._require_age()
        _provision(conn, tenant, self.db.settings.database.app_role, self.db.lock_timeout_ms)

    def _require_age(self) -> None:
        capabilities = self.db.capabilities
        if capabilities is None or not capabilities.age:
            raise CapabilityMissing(
                "the knowledge graph needs the Apache AGE extension, which this Postgres "
                "does not have: install AGE (https://age.apache.org) and run `elephant "
                "migrate`, or use the embedded server, which includes it"
            )

    def counts(self, conn: Connection, tenant: str) -> GraphCounts:
        if not self.exists(conn, tenant):
            return GraphCounts(entities=0, relations={})
        entities = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(_vertices(tenant))
        ).fetchone()
        rows = conn.execute(sql.SQL(_statement("counts")).format(edges=_edges(tenant))).fetchall()
        return GraphCounts.tally(int(entities[0]) if entities else 0, rows)

    # ------------------------------------------------------------ entities

    def entities(self, conn: Connection, tenant: str, keys: Sequence[str]) -> dict[str, Entity]:
        """In the order asked, read in SQL through the unique key index (sql/graph/
        age_entities.sql)."""
        if not keys:
            return {}
        wanted = list(dict.fromkeys(keys))
        statement = sql.SQL(_statement("entities")).format(entity=_vertices(tenant))
        found = [_entity(json.loads(row[0])) for row in conn.execute(statement, (wanted,))]
        by_key = {entity.key: entity for entity in found}
        return {key: by_key[key] for key in wanted if key in by_key}

    def create_entities(self, conn: Connection, tenant: str, entities: Sequence[Entity]) -> None:
        self._set_entities(
            conn, tenant, "UNWIND $rows AS row CREATE (e:Entity) SET e = row", entities
        )

    def update_entities(self, conn: Connection, tenant: str, entities: Sequence[Entity]) -> None:
        self._set_entities(
            conn,
            tenant,
            "UNWIND $rows AS row MATCH (e:Entity {key: row.key}) SET e = row",
            entities,
        )

    def _set_entities(
        self, conn: Connection, tenant: str, query: str, entities: Sequence[Entity]
    ) -> None:
        """``query`` sets each vertex to its entity's properties (``$rows``)."""
        if entities:
            self._run(conn, tenant, query, {"rows": [entity.properties() for entity in entities]})

    def delete_entities(self, conn: Connection, tenant: str, keys: Sequence[str]) -> int:
        existing = self.entities(conn, tenant, keys)
        if existing:
            self._run(
                conn,
                tenant,
                "UNWIND $keys AS k MATCH (e:Entity {key: k}) DETACH DELETE e",
                {"keys": list(existing)},
            )
        return len(existing)

    def candidates(
        self, conn: Connection, tenant: str, text: str, *, domain: str | None, role: str | None
    ) -> list[Entity]:
        rows = self._run(
            conn,
            tenant,
            "MATCH (e:Entity) WHERE (e.key CONTAINS $q OR $q CONTAINS e.key) "
            "AND ($domain IS NULL OR e.domain = $domain) "
            "AND ($role IS NULL OR e.role = $role) RETURN properties(e)",
            {"q": text, "domain": domain, "role": role},
        )
        return [_entity(props) for (props,) in rows]

    def page(
        self, conn: Connection, tenant: str, offset: int, limit: int
    ) -> tuple[list[Entity], int]:
        if not self.exists(conn, tenant):  # no entity recorded yet: no graph to read
            return [], 0
        total_rows = self._run(conn, tenant, "MATCH (e:Entity) RETURN count(e)", {})
        rows = self._run(
            conn,
            tenant,
            "MATCH (e:Entity) RETURN properties(e) ORDER BY e.key SKIP $offset LIMIT $limit",
            {"offset": offset, "limit": limit},
        )
        return [_entity(row[0]) for row in rows], int(total_rows[0][0])

    def named(self, conn: Connection, tenant: str, keys: Sequence[str], pattern: str) -> set[str]:
        if not self.exists(conn, tenant):
            return set()
        statement = sql.SQL(_statement("named")).format(entity=_vertices(tenant))
        rows = conn.execute(statement, (sorted(set(keys)), pattern)).fetchall()
        return {str(row[0]) for row in rows}

    def walk(
        self, conn: Connection, tenant: str, keys: Sequence[str], hops: int, limit: int
    ) -> Walk:
        """A statement per hop (``entities_with_relations`` walks the start/end indexes)."""
        return walk_by_hops(self, conn, tenant, keys, hops, limit)

    # ------------------------------------------------------------ relations

    def count_relations(self, conn: Connection, tenant: str, keys: Sequence[str]) -> int:
        if not keys or not self.exists(conn, tenant):
            return 0
        row = conn.execute(
            sql.SQL(_statement("count_relations")).format(
                entity=_vertices(tenant), edges=_edges(tenant)
            ),
            (sorted(set(keys)),),
        ).fetchone()
        return int(row[0]) if row else 0

    def relations(
        self, conn: Connection, tenant: str, keys: Sequence[str], *, active_only: bool
    ) -> list[Relation]:
        return self.entities_with_relations(conn, tenant, keys, active_only=active_only)[1]

    def entities_with_relations(
        self, conn: Connection, tenant: str, keys: Sequence[str], *, active_only: bool
    ) -> tuple[dict[str, Entity], list[Relation]]:
        """The entities among the keys and every edge touching them: one statement, read
        from AGE's label tables in SQL (sql/graph/age_entities_with_relations.sql says
        why not in Cypher)."""
        if not keys:
            return {}, []
        statement = sql.SQL(_statement("entities_with_relations")).format(
            entity=_vertices(tenant), edges=_edges(tenant)
        )
        rows = conn.execute(statement, (list(dict.fromkeys(keys)),)).fetchall()
        entities: dict[str, Entity] = {}
        relations = []
        for relation_type, source, target, props, _edge_id in rows:
            if relation_type is None:
                entity = _entity(json.loads(source))
                entities[entity.key] = entity
                continue
            relation = Relation(
                json.loads(source)["key"], relation_type, json.loads(target)["key"],
                json.loads(props) if props else {},
            )  # fmt: skip
            if relation.active or not active_only:
                relations.append(relation)
        return entities, relations

    def create_relations(
        self, conn: Connection, tenant: str, relations: Sequence[Relation]
    ) -> None:
        for relation_type, group in _by_type(relations).items():
            self._run(
                conn,
                tenant,
                "UNWIND $rows AS row "
                "MATCH (a:Entity {key: row.s}), (b:Entity {key: row.t}) "
                "WITH a, b, row.p AS p CREATE (a)-[r:<LABEL>]->(b) SET r = p",
                {"rows": [{"s": r.source, "t": r.target, "p": r.properties} for r in group]},
                label=relation_type,
            )

    def invalidate_relations(
        self, conn: Connection, tenant: str, triples: Sequence[Triple], valid_to: str
    ) -> int:
        return self._each_triple(
            conn,
            tenant,
            triples,
            "WHERE r.valid_to IS NULL SET r.valid_to = $valid_to RETURN id(r)",
            {"valid_to": valid_to},
        )

    def delete_relations(self, conn: Connection, tenant: str, triples: Sequence[Triple]) -> int:
        return self._each_triple(
            conn, tenant, triples, "WITH r, id(r) AS rid DELETE r RETURN rid", {}
        )

    def _each_triple(
        self,
        conn: Connection,
        tenant: str,
        triples: Sequence[Triple],
        action: str,
        params: JSONObject,
    ) -> int:
        """``action`` on the edge of each (source, type, target) triple, a statement per
        type (the label); how many edges it returned."""
        done = 0
        for relation_type, group in _by_type([Relation(s, t, d) for s, t, d in triples]).items():
            rows = self._run(
                conn,
                tenant,
                "UNWIND $rows AS row "
                "MATCH (a:Entity {key: row.s})-[r:<LABEL>]->(b:Entity {key: row.t}) " + action,
                {"rows": [{"s": r.source, "t": r.target} for r in group], **params},
                label=relation_type,
            )
            done += len(rows)
        return done


def _by_type(relations: Sequence[Relation]) -> dict[str, list[Relation]]:
    groups: dict[str, list[Relation]] = {}
    for relation in relations:
        groups.setdefault(relation.relation_type, []).append(relation)
    return groups


def _entity(props: JSONObject) -> Entity:
    return Entity(
        key=str(props["key"]),
        name=str(props.get("name", props["key"])),
        role=str(props.get("role", "thing")),
        domain=str(props.get("domain", "general")),
        epistemic=str(props.get("epistemic", "unknown")),
        source=str(props.get("source", "record")),
        created_at=props.get("created_at"),
        updated_at=props.get("updated_at"),
        valid_from=props.get("valid_from"),
        valid_to=props.get("valid_to"),
    )


# ------------------------------------------------------------------ provisioning


def _provision(
    conn: psycopg.Connection[Any], tenant: str, app_role: str, lock_timeout_ms: int
) -> None:
    """Graph + Entity label + every relation label + indexes + grants + registry row."""
    graph = graph_name(tenant)
    role = sql.Identifier(app_role)
    schema = sql.Identifier(graph)
    conn.execute("SET LOCAL search_path = public, ag_catalog")  # AGE's operator classes
    # Bounded: an outside session holding this key (or a lock on the graph's tables) makes
    # the write a 503 with Retry-After, not a wait without end (app/db/lock_waits.py).
    lock_waits.bound(conn, lock_timeout_ms)
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (graph,))
    conn.execute("SELECT set_config('elephant.tenant_id', %s, true)", (tenant,))
    conn.execute("INSERT INTO tenants (id) VALUES (%s) ON CONFLICT (id) DO NOTHING", (tenant,))
    if (
        conn.execute("SELECT 1 FROM ag_catalog.ag_graph WHERE name = %s", (graph,)).fetchone()
        is None
    ):
        conn.execute("SELECT ag_catalog.create_graph(%s::name)", (graph,))
    labels = {row[0] for row in conn.execute(_statement("labels"), (graph,))}
    if ENTITY_LABEL not in labels:
        conn.execute(
            "SELECT ag_catalog.create_vlabel(%s::cstring, %s::cstring)", (graph, ENTITY_LABEL)
        )
        table = sql.Identifier(graph, ENTITY_LABEL)
        # AGE 1.7 creates the id key and the edge start/end indexes itself; older
        # versions do not. Same names as AGE's, so nothing is built twice.
        conn.execute(
            sql.SQL("CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} (id)").format(
                sql.Identifier(f"{ENTITY_LABEL}_pkey"), table
            )
        )
        conn.execute(sql.SQL("CREATE INDEX ON {} USING gin (properties)").format(table))
        # One vertex per key, whatever the concurrency.
        conn.execute(sql.SQL(_statement("key_index")).format(table=table))
    for relation_type in RELATIONS:
        if relation_type in labels:
            continue
        conn.execute(
            "SELECT ag_catalog.create_elabel(%s::cstring, %s::cstring)", (graph, relation_type)
        )
        table = sql.Identifier(graph, relation_type)
        for column in ("start_id", "end_id"):
            conn.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ({})").format(
                    sql.Identifier(f"{relation_type}_{column}_idx"), table, sql.Identifier(column)
                )
            )
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA ag_catalog TO {}").format(role))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, role))
    conn.execute(
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(
            schema, role
        )
    )
    conn.execute(
        sql.SQL("GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(
            schema, role
        )
    )
    # Row-level security on every table of the graph, bound to this tenant: the app
    # role sees and writes only the graph of the tenant its transaction is set to.
    conn.execute("SELECT elephant_secure_graph(%s, %s)", (graph, tenant))
    conn.execute(
        "INSERT INTO graphs (tenant_id, graph_name) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (tenant, graph),
    )
    log.info("graph %s ready for tenant %s", graph, tenant)

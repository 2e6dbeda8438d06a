-- AGE graph store (app/services/graph/age.py, entities_with_relations): the vertices of
-- the given keys (rows whose first column is null) and every edge touching them (label,
-- start and end vertex, properties), edges in creation order. Read from AGE's label
-- tables in SQL: the Cypher form (UNWIND + MATCH) is planned with a guessed 1000 rows per
-- UNWIND and hash-joins every edge of the graph (~17 ms at 30k edges and growing); this
-- walks the key index and the start_id / end_id indexes instead. The code composes in
-- {entity} and {edges}, the tenant graph's Entity label table and parent edge table (the
-- graph is the tenant's own schema).
-- Parameters, in order: keys (text[]).
WITH seeds AS MATERIALIZED (
    SELECT e.id, e.properties FROM {entity} AS e
    WHERE ag_catalog.agtype_access_operator(
              VARIADIC ARRAY[e.properties, '"key"'::ag_catalog.agtype])
          OPERATOR(ag_catalog.=) ANY (
              SELECT to_json(k)::text::ag_catalog.agtype
              FROM unnest(%s::text[]) AS k)
),
touching AS (
    SELECT r.id, r.tableoid, r.start_id, r.end_id, r.properties FROM {edges} AS r
    WHERE r.start_id OPERATOR(ag_catalog.=) ANY (SELECT id FROM seeds)
    UNION
    SELECT r.id, r.tableoid, r.start_id, r.end_id, r.properties FROM {edges} AS r
    WHERE r.end_id OPERATOR(ag_catalog.=) ANY (SELECT id FROM seeds)
)
SELECT NULL::text, s.properties::text, NULL::text, NULL::text, NULL::bigint
FROM seeds AS s
UNION ALL
SELECT c.relname::text, a.properties::text, b.properties::text, t.properties::text,
       t.id::text::bigint
FROM touching AS t
JOIN pg_catalog.pg_class AS c ON c.oid = t.tableoid
JOIN {entity} AS a ON a.id OPERATOR(ag_catalog.=) t.start_id
JOIN {entity} AS b ON b.id OPERATOR(ag_catalog.=) t.end_id
ORDER BY 5 NULLS FIRST

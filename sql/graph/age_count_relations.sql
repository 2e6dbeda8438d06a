-- AGE graph store (app/services/graph/age.py, count_relations): how many edges, current
-- and closed, touch the vertices of the given keys (what deleting them would take),
-- through the start_id and end_id indexes. The code composes in {entity} and {edges},
-- the tenant graph's Entity label table and parent edge table (the graph is the tenant's
-- own schema).
-- Parameters, in order: keys (text[]).
WITH doomed AS MATERIALIZED (SELECT e.id FROM {entity} AS e
                              WHERE e.properties::text::jsonb ->> 'key' = ANY(%s))
SELECT count(*)
  FROM {edges} AS r
 WHERE r.start_id OPERATOR(ag_catalog.=) ANY (SELECT id FROM doomed)
    OR r.end_id OPERATOR(ag_catalog.=) ANY (SELECT id FROM doomed)

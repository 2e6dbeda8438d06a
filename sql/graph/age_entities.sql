-- AGE graph store (app/services/graph/age.py, entities): the vertices of the given keys,
-- read in SQL through the unique key index (the Cypher form, UNWIND + MATCH, took ~6 ms
-- for one key and over a second for 200 at 10k entities). The code composes in {entity},
-- the tenant graph's Entity label table (the graph is the tenant's own schema).
-- Parameters, in order: keys (text[]).
SELECT e.properties::text
  FROM {entity} AS e
 WHERE ag_catalog.agtype_access_operator(VARIADIC ARRAY[e.properties, '"key"'::ag_catalog.agtype])
       OPERATOR(ag_catalog.=) ANY (
           SELECT to_json(k)::text::ag_catalog.agtype FROM unnest(%s::text[]) AS k)

-- AGE graph store (app/services/graph/age.py, named): the keys among the given ones, and
-- of entities whose name matches the pattern (erasure finds a subject's entities so).
-- The code composes in {entity}, the tenant graph's Entity label table (the graph is the
-- tenant's own schema).
-- Parameters, in order: keys (text[]); the name pattern (a case-insensitive regex).
SELECT v.p ->> 'key'
  FROM (SELECT e.properties::text::jsonb AS p FROM {entity} AS e) AS v
 WHERE v.p ->> 'key' = ANY(%s) OR v.p ->> 'name' ~* %s

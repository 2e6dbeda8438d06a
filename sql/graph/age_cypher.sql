-- AGE graph store (app/services/graph/age.py, cypher_statement): one Cypher query on the
-- tenant's graph. The code composes in, with psycopg.sql, the graph's name (a literal,
-- checked against the graph name pattern), the Cypher text (a constant of age.py,
-- dollar-quoted as AGE wants it) and the result columns, each of type agtype.
-- Parameters, in order: the Cypher query's values as one JSON map (agtype).
SELECT * FROM ag_catalog.cypher({graph}, $cypher${query}$cypher$, %s::ag_catalog.agtype)
    AS ({cols})

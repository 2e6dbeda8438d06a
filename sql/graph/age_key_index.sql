-- AGE provisioning (app/services/graph/age.py, _provision): one vertex per key, whatever
-- the concurrency: a unique index on the Entity label table's "key" property. The code
-- composes in {table}, that label table.
-- Parameters: none.
CREATE UNIQUE INDEX ON {table}
    (ag_catalog.agtype_access_operator(VARIADIC ARRAY[properties, '"key"'::ag_catalog.agtype]))

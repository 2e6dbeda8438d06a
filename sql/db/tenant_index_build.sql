-- A tenant's own HNSW index on one vector table, built without blocking writes
-- (app/db/tenant_indexes.py, _build): a partial index the planner uses for the
-- tenant's vector lane. Composed with psycopg.sql: name and table (identifiers),
-- options (the HNSW build options, a constant of tenant_indexes.py), tenant (a literal:
-- CREATE INDEX takes no parameters).
CREATE INDEX CONCURRENTLY {name} ON {table} USING hnsw (embedding vector_cosine_ops)
  WITH ({options}) WHERE tenant_id = {tenant}

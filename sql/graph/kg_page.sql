-- Relational graph store (app/services/graph/relational.py, page): one page of the
-- tenant's entities in key order (the console's and the API's entity list).
-- Parameters, in order: tenant, offset, limit.
SELECT key, name, role, domain, epistemic, source, created_at, updated_at, valid_from,
       valid_to
  FROM kg_entities
 WHERE tenant_id = %s
 ORDER BY key OFFSET %s LIMIT %s

-- Relational graph store (app/services/graph/relational.py, entities): the entities of
-- the given keys, through the (tenant_id, key) primary key; the code puts them in the
-- order asked.
-- Parameters, in order: tenant; keys (text[]).
SELECT key, name, role, domain, epistemic, source, created_at, updated_at, valid_from,
       valid_to
  FROM kg_entities
 WHERE tenant_id = %s AND key = ANY(%s)

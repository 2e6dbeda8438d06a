-- Relational graph store (app/services/graph/relational.py, create_entities): a batch of
-- entities in one statement, one array per column. A key that exists already is a unique
-- violation, as in the AGE store.
-- Parameters, in order: tenant; then the arrays key, name, role, domain, epistemic, source
-- (text[]) and created_at, updated_at, valid_from, valid_to (timestamptz[]).
INSERT INTO kg_entities (tenant_id, key, name, role, domain, epistemic, source, created_at,
                         updated_at, valid_from, valid_to)
SELECT %s, *
  FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
              %s::timestamptz[], %s::timestamptz[], %s::timestamptz[], %s::timestamptz[])

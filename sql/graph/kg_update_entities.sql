-- Relational graph store (app/services/graph/relational.py, update_entities): a batch of
-- entities rewritten in one statement, every field replaced (an unset one becomes null),
-- as `SET e = row` in AGE.
-- Parameters, in order: the arrays key, name, role, domain, epistemic, source (text[])
-- and created_at, updated_at, valid_from, valid_to (timestamptz[]); then tenant.
UPDATE kg_entities AS e
   SET name = u.name, role = u.role, domain = u.domain, epistemic = u.epistemic,
       source = u.source, created_at = u.created_at, updated_at = u.updated_at,
       valid_from = u.valid_from, valid_to = u.valid_to
  FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
              %s::timestamptz[], %s::timestamptz[], %s::timestamptz[], %s::timestamptz[])
       AS u (key, name, role, domain, epistemic, source, created_at, updated_at, valid_from,
             valid_to)
 WHERE e.tenant_id = %s AND e.key = u.key

-- Relational graph store (app/services/graph/relational.py, invalidate_relations): the
-- current relation of each (source, type, target) triple closed at the given time.
-- Parameters, in order: valid_to; the arrays source keys, relation types, target keys
-- (text[]); tenant.
UPDATE kg_relations AS r
   SET valid_to = %s
  FROM (SELECT DISTINCT * FROM unnest(%s::text[], %s::text[], %s::text[])) AS t (s, kind, d)
 WHERE r.tenant_id = %s AND r.source_key = t.s AND r.relation_type = t.kind
   AND r.target_key = t.d AND r.valid_to IS NULL

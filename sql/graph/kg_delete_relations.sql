-- Relational graph store (app/services/graph/relational.py, delete_relations): every
-- relation of each (source, type, target) triple, current and closed.
-- Parameters, in order: the arrays source keys, relation types, target keys (text[]);
-- tenant.
DELETE FROM kg_relations AS r
 USING (SELECT DISTINCT * FROM unnest(%s::text[], %s::text[], %s::text[])) AS t (s, kind, d)
 WHERE r.tenant_id = %s AND r.source_key = t.s AND r.relation_type = t.kind
   AND r.target_key = t.d

-- Relational graph store (app/services/graph/relational.py, relations): the relations
-- touching any of the keys, both directions through the two key indexes (a bitmap OR),
-- in recorded order. The code composes in {current}: nothing, or, for current relations
-- only, `AND valid_to IS NULL`.
-- Parameters: t (tenant), k (text[], the keys).
SELECT source_key, relation_type, target_key, valid_from, valid_to, recorded_at, epistemic,
       source, properties
  FROM kg_relations
 WHERE tenant_id = %(t)s
   AND (source_key = ANY(%(k)s) OR target_key = ANY(%(k)s)){current}
 ORDER BY id

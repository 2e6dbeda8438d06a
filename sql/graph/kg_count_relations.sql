-- Relational graph store (app/services/graph/relational.py, count_relations): how many
-- relations, current and closed, touch any of the keys (what deleting them would take).
-- Parameters: t (tenant), k (text[], the keys).
SELECT count(*)
  FROM kg_relations
 WHERE tenant_id = %(t)s AND (source_key = ANY(%(k)s) OR target_key = ANY(%(k)s))

-- Relational graph store (app/services/graph/relational.py, walk): the current relations
-- among the entities a walk kept that touch one short of the last hop (an edge between two
-- entities at the last hop leads nowhere the walk went), in recorded order.
-- Parameters: t (tenant), all (text[], every kept key), inner (text[], the keys short of
-- the last hop).
SELECT source_key, relation_type, target_key, valid_from, valid_to, recorded_at, epistemic,
       source, properties
  FROM kg_relations
 WHERE tenant_id = %(t)s AND valid_to IS NULL
   AND source_key = ANY(%(all)s) AND target_key = ANY(%(all)s)
   AND (source_key = ANY(%(inner)s) OR target_key = ANY(%(inner)s))
 ORDER BY id

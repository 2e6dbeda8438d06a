-- Relational graph store (app/services/graph/relational.py, counts): the tenant's
-- relations by type, current (valid_to null) and closed apart (GraphCounts.tally).
-- Parameters, in order: tenant.
SELECT relation_type, valid_to IS NULL, count(*)
  FROM kg_relations
 WHERE tenant_id = %s
 GROUP BY 1, 2
 ORDER BY 1

-- A tenant's facts by status and source (app/services/ops/stats.py): how many and their
-- text's bytes; a fact without a source counts under '(none)'.
-- Parameters (positional): tenant.
SELECT status, coalesce(source, '(none)'), count(*), coalesce(sum(octet_length(text)), 0)
  FROM facts
 WHERE tenant_id = %s
 GROUP BY 1, 2
 ORDER BY 1, 2

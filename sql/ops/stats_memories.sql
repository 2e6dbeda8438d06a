-- A tenant's memories by kind and source (app/services/ops/stats.py): how many, their
-- text's bytes, and how many still wait for a vector.
-- Parameters (positional): tenant.
SELECT kind, source, count(*), coalesce(sum(octet_length(text)), 0),
       count(*) FILTER (WHERE embedding IS NULL)
  FROM memories
 WHERE tenant_id = %s
 GROUP BY 1, 2
 ORDER BY 1, 2

-- LLM calls of the current tenant since a time, summed by day (UTC) and operation,
-- by operation, by day, and in all (GROUPING SETS: one statement, one scan).
--   %(tenant)s text          the tenant (also elephant.tenant_id)
--   %(since)s  timestamptz   the window's start
-- no_day / no_operation: 1 on the rows that sum over every day / every operation.
-- latency: mean and 95th percentile of the calls' latency_ms (retries included).
SELECT day,
       operation,
       GROUPING(day)                                                AS no_day,
       GROUPING(operation)                                          AS no_operation,
       count(*)                                                     AS calls,
       count(*) FILTER (WHERE NOT ok)                               AS failures,
       coalesce(sum(tokens_in), 0)::bigint                          AS tokens_in,
       coalesce(sum(tokens_out), 0)::bigint                         AS tokens_out,
       avg(latency_ms)::float8                                      AS latency_ms_mean,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)     AS latency_ms_p95
  FROM (SELECT (created_at AT TIME ZONE 'UTC')::date AS day, operation, ok,
               tokens_in, tokens_out, latency_ms
          FROM llm_usage
         WHERE tenant_id = %(tenant)s AND created_at >= %(since)s) AS calls
 GROUP BY GROUPING SETS ((day, operation), (operation), (day), ())
 ORDER BY no_day, no_operation, day, operation;

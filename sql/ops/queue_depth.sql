-- The Prometheus queue gauge (app/services/ops/metrics.py, RuntimeCollector): jobs
-- queued and running by kind, summed over every tenant (jobs stays on the coordinator
-- on Citus). No parameters.
SELECT kind, status, count(*)
  FROM jobs
 WHERE status IN ('queued', 'running')
 GROUP BY kind, status

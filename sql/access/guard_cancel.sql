-- The analyst guard (app/services/access/analyst_guard.py): every analyst statement
-- running longer than its role's statement timeout (a session may SET statement_timeout
-- = 0 for itself; the guard cancels it anyway). Run as the migrator, every second.
SELECT a.name, a.role_name, s.pid
  FROM pg_stat_activity AS s
  JOIN analysts AS a ON a.role_name = s.usename
 WHERE s.backend_type = 'client backend'
   AND s.state IN ('active', 'fastpath function call')
   AND s.query_start < clock_timestamp() - make_interval(secs => a.statement_timeout_seconds)

-- The analyst guard: every analyst backend running a statement now, for the memory check
-- (where the server runs on this machine, the embedded one). Run as the migrator.
SELECT a.name, a.role_name, s.pid
  FROM pg_stat_activity AS s
  JOIN analysts AS a ON a.role_name = s.usename
 WHERE s.backend_type = 'client backend'
   AND s.state IN ('active', 'fastpath function call')

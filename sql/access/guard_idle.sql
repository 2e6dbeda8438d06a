-- The analyst guard: end every analyst session idle in a transaction for longer than
-- %(idle_seconds)s (its locks, snapshot and connection slot go with it), whatever
-- idle_in_transaction_session_timeout the session set. Run as the migrator.
SELECT a.name, s.pid, pg_terminate_backend(s.pid) AS signalled
  FROM pg_stat_activity AS s
  JOIN analysts AS a ON a.role_name = s.usename
 WHERE s.backend_type = 'client backend'
   AND s.state IN ('idle in transaction', 'idle in transaction (aborted)')
   AND s.state_change < clock_timestamp() - make_interval(secs => %(idle_seconds)s)

-- The analyst guard: every analyst session idle in a transaction for longer than
-- %(idle_seconds)s, which the guard ends (its locks, snapshot and connection slot go
-- with it) whatever idle_in_transaction_session_timeout the session set. Run as the
-- migrator, every second.
SELECT a.name, a.role_name, s.pid
  FROM pg_stat_activity AS s
  JOIN analysts AS a ON a.role_name = s.usename
 WHERE s.backend_type = 'client backend'
   AND s.state IN ('idle in transaction', 'idle in transaction (aborted)')
   AND s.state_change < clock_timestamp() - make_interval(secs => %(idle_seconds)s)

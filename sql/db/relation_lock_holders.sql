-- Sessions other than this one that hold a lock on a table, view or index of this
-- database (app/db/lock_waits.py): a migration whose DDL gave up waiting for its
-- lock_timeout names them in its error. Same columns as advisory_holders.sql.
-- Parameters: none.
SELECT DISTINCT a.pid, a.usename::text, a.application_name, a.state,
       extract(epoch FROM now() - coalesce(a.xact_start, a.backend_start))::int
  FROM pg_locks AS l
  JOIN pg_stat_activity AS a ON a.pid = l.pid
 WHERE l.locktype = 'relation' AND l.granted
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.pid <> pg_backend_pid()
 ORDER BY a.pid

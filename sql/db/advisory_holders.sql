-- Who holds an advisory lock (app/db/lock_waits.py), so a start or a request that gave
-- up waiting for it can name the session in its error: pid, user, application_name,
-- state and seconds since its transaction (or connection) began.
-- A bigint key is stored as classid (high 32 bits), objid (low 32 bits), objsubid 1.
-- Parameters: key (bigint).
SELECT a.pid, a.usename::text, a.application_name, a.state,
       extract(epoch FROM now() - coalesce(a.xact_start, a.backend_start))::int
  FROM pg_locks AS l
  JOIN pg_stat_activity AS a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid::bigint = ((%(key)s::bigint >> 32) & 4294967295)
   AND l.objid::bigint = (%(key)s::bigint & 4294967295)
   AND l.pid <> pg_backend_pid()
 ORDER BY a.pid

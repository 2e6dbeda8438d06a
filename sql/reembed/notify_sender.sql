-- The embedding follower (app/services/ops/reembed/embedders.py): may the session that
-- sent a notification on elephant_embedding write elephant_meta? Only the migrator (a
-- re-embed) may; any role can NOTIFY the channel, so an analyst's notifications wake
-- nothing. No row: the sender has already gone.
-- Parameters: pid (the notification's sender).
SELECT coalesce(has_table_privilege(a.usename, 'public.elephant_meta', 'UPDATE'), false)
  FROM pg_stat_activity AS a
 WHERE a.pid = %(pid)s

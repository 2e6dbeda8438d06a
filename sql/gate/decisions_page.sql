-- The gate's decisions, newest first, one page (app/services/gate/decisions.py:
-- GET /amac/decisions, and the recent rejections of GET /amac/metrics). Paged by id,
-- a keyset: a cursor carries the last id shown.
--   the filter's parameters (decision_filter.sql): tenant, decision, kind
--   %(before)s  bigint  only decisions older than this id; NULL: from the newest
--   %(limit)s   int     at most this many rows (a page asks one more, to know there is a next)
SELECT
    {decision_columns}
  FROM admission_log
 WHERE
    {decision_filter}
   AND (%(before)s::bigint IS NULL OR id < %(before)s)
 ORDER BY id DESC
 LIMIT %(limit)s

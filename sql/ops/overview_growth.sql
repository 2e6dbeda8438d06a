-- Memories and facts added per day (UTC) over a window, with running totals, for
-- the current tenant (row-level security picks the rows).
--   %(tenant)s text          the tenant (also elephant.tenant_id)
--   %(first)s  date          the window's first day (UTC)
--   %(last)s   date          the window's last day (UTC), usually today
--   %(since)s  timestamptz   midnight UTC at the start of %(first)s
-- One row per day, days without additions included. The totals count what is stored
-- now, by the day it was added: a row erased since then counts on no day. Facts of
-- every status count (a superseded fact was still learned that day).
WITH days AS (
    SELECT d::date AS day
      FROM generate_series(%(first)s::date, %(last)s::date, interval '1 day') AS d
), memories_added AS (
    SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n
      FROM memories
     WHERE tenant_id = %(tenant)s AND created_at >= %(since)s
     GROUP BY 1
), facts_added AS (
    SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n
      FROM facts
     WHERE tenant_id = %(tenant)s AND created_at >= %(since)s
     GROUP BY 1
), earlier AS (
    SELECT (SELECT count(*) FROM memories
             WHERE tenant_id = %(tenant)s AND created_at < %(since)s) AS memories,
           (SELECT count(*) FROM facts
             WHERE tenant_id = %(tenant)s AND created_at < %(since)s) AS facts
)
SELECT days.day,
       coalesce(m.n, 0)                                              AS memories_added,
       coalesce(f.n, 0)                                              AS facts_added,
       (earlier.memories + sum(coalesce(m.n, 0)) OVER upto)::bigint  AS memories_total,
       (earlier.facts + sum(coalesce(f.n, 0)) OVER upto)::bigint     AS facts_total
  FROM days
 CROSS JOIN earlier
  LEFT JOIN memories_added AS m ON m.day = days.day
  LEFT JOIN facts_added AS f ON f.day = days.day
WINDOW upto AS (ORDER BY days.day)
 ORDER BY days.day;

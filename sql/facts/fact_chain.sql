-- A fact's supersession chain inside the current tenant: the facts it replaced
-- (step -1 replaced directly, -2 before that, ...) and the facts that replaced it
-- (step 1, 2, ...), by facts.superseded_by. Several facts may have been replaced by
-- one fact, so a negative step can hold more than one row; a cycle (not written by
-- contradictions.py, but possible by hand) stops where a fact repeats. Every part of
-- the recursion names the tenant (as well as row-level security), so Citus runs it
-- on the one shard holding the tenant.
--
-- Parameters:
--   tenant text    the tenant (also elephant.tenant_id)
--   fact_id uuid   the fact the chain is drawn around (step 0, not returned)
--   depth integer  at most this many steps each way
WITH RECURSIVE later (id, step, path) AS (
    SELECT f.superseded_by, 1, ARRAY[f.id, f.superseded_by]
      FROM facts AS f
     WHERE f.tenant_id = %(tenant)s AND f.id = %(fact_id)s AND f.superseded_by IS NOT NULL
             AND f.superseded_by <> f.id
    UNION ALL
    SELECT f.superseded_by, l.step + 1, l.path || f.superseded_by
      FROM later AS l JOIN facts AS f ON f.tenant_id = %(tenant)s AND f.id = l.id
     WHERE f.superseded_by IS NOT NULL AND NOT f.superseded_by = ANY (l.path)
       AND l.step < %(depth)s
), earlier (id, step, path) AS (
    SELECT f.id, -1, ARRAY[%(fact_id)s::uuid, f.id]
      FROM facts AS f
     WHERE f.tenant_id = %(tenant)s AND f.superseded_by = %(fact_id)s AND f.id <> %(fact_id)s
    UNION ALL
    SELECT f.id, e.step - 1, e.path || f.id
      FROM earlier AS e JOIN facts AS f ON f.tenant_id = %(tenant)s AND f.superseded_by = e.id
     WHERE NOT f.id = ANY (e.path) AND e.step > -%(depth)s
)
SELECT c.step, f.id::text, f.text, f.subject, f.status, f.valid_from, f.valid_to,
       f.recorded_at, f.expired_at, f.superseded_by::text
  FROM (SELECT id, step FROM later UNION ALL SELECT id, step FROM earlier) AS c
  JOIN facts AS f ON f.tenant_id = %(tenant)s AND f.id = c.id
 ORDER BY c.step, f.recorded_at, f.id

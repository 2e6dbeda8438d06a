-- Relational graph store (app/services/graph/relational.py, walk): every entity within
-- `hops` hops of the seeds over current relations, each at its nearest distance, the
-- nearest first (seeds first, in the order given). One recursive CTE, read only as far as
-- the LIMIT of `bounded` (a guard for dense graphs, WALK_CAP); the second column says
-- whether that cap was reached. One row more than `limit` says there were more.
-- Parameters: keys (text[], the seeds), tenant, hops, cap, limit.
WITH RECURSIVE reach (key, depth, seed) AS (
    SELECT s.key COLLATE "C", 0, s.ord
      FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS s (key, ord)
  UNION
    SELECT n.key, r.depth + 1, NULL::bigint
      FROM reach AS r
      CROSS JOIN LATERAL (
          SELECT e.target_key FROM kg_relations AS e
           WHERE e.tenant_id = %(tenant)s AND e.source_key = r.key AND e.valid_to IS NULL
          UNION ALL
          SELECT e.source_key FROM kg_relations AS e
           WHERE e.tenant_id = %(tenant)s AND e.target_key = r.key AND e.valid_to IS NULL
      ) AS n (key)
     WHERE r.depth < %(hops)s
),
bounded AS (SELECT key, depth, seed FROM reach LIMIT %(cap)s),
nearest AS (SELECT key, min(depth) AS depth, min(seed) AS seed FROM bounded GROUP BY key)
SELECT n.depth, (SELECT count(*) FROM bounded) >= %(cap)s,
       e.key, e.name, e.role, e.domain, e.epistemic, e.source, e.created_at, e.updated_at,
       e.valid_from, e.valid_to
  FROM nearest AS n
  JOIN kg_entities AS e ON e.tenant_id = %(tenant)s AND e.key = n.key
 ORDER BY n.depth, n.seed, n.key
 LIMIT %(limit)s + 1

-- Access statistics of one tenant, a batch at a time (app/services/retrieval/access_stats.py): the uses
-- the API saw since its last batch, added to access_stats. A search itself writes
-- nothing: the memories and facts rows, and so their vector, BM25 and GIN indexes, are
-- never touched. Items erased since they were used are skipped.
--
-- Parameters
--   tenant text
--   ids uuid[], kinds text[] ('memory' | 'fact'), counts int[], last_at timestamptz[]
--       one entry per item, sorted by id (two API processes lock rows in one order)
INSERT INTO access_stats AS a (tenant_id, item_id, item_kind, access_count, last_accessed_at)
SELECT %(tenant)s, u.id, u.kind, u.uses, u.last_at
FROM unnest(%(ids)s::uuid[], %(kinds)s::text[], %(counts)s::int[], %(last_at)s::timestamptz[])
     AS u(id, kind, uses, last_at)
WHERE (u.kind = 'memory' AND EXISTS (SELECT 1 FROM memories AS m
                                     WHERE m.tenant_id = %(tenant)s AND m.id = u.id))
   OR (u.kind = 'fact' AND EXISTS (SELECT 1 FROM facts AS f
                                   WHERE f.tenant_id = %(tenant)s AND f.id = u.id))
ORDER BY u.id
ON CONFLICT (tenant_id, item_id) DO UPDATE
   SET access_count = least(a.access_count::bigint + excluded.access_count, 2147483647),
       last_accessed_at = greatest(a.last_accessed_at, excluded.last_accessed_at)

-- For each new fact: the active facts about the same subject, most similar first,
-- the candidates it may contradict. One round trip for a whole extraction batch.
--   ids uuid[], subjects text[] (lower-case), vectors vector[] (binary): parallel arrays
--   %(k)s int  candidates per fact
--   %(tenant)s text  the tenant (also elephant.tenant_id)
SELECT q.ord::int                              AS ord,
       f.id,
       f.text,
       f.valid_from,
       1 - f.distance                          AS similarity
FROM unnest(%(ids)s::uuid[], %(subjects)s::text[], %(vectors)b::vector[])
         WITH ORDINALITY AS q(id, subject, embedding, ord)
CROSS JOIN LATERAL (
    SELECT c.id, c.text, c.valid_from, c.embedding <=> q.embedding AS distance
    FROM facts AS c
    WHERE c.tenant_id = %(tenant)s
      AND c.status = 'active'
      AND c.expired_at IS NULL
      AND c.subject_key = q.subject
      AND c.id <> q.id
      AND c.embedding IS NOT NULL
    ORDER BY c.embedding <=> q.embedding
    LIMIT %(k)s
) AS f
ORDER BY q.ord, f.distance;

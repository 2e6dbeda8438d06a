-- For each new text's vector: the current tenant's most similar stored memories.
-- Feeds novelty (A-MAC gate) and near-duplicate detection in one round trip.
-- The statement names the tenant, and row-level security limits the scan to it too.
--   %(tenant)s                text      the tenant (also elephant.tenant_id)
--   vectors                   vector[]  one per new text, in order (sent binary)
--   %(k)s                     int       neighbours per vector
--   %(exclude_conversation)s  uuid      windows of this conversation are skipped
--                                       (they overlap by design), or NULL
SELECT q.ord::int                AS ord,
       n.id,
       n.text,
       1 - n.distance            AS similarity
FROM unnest(%(vectors)b::vector[]) WITH ORDINALITY AS q(embedding, ord)
CROSS JOIN LATERAL (
    SELECT m.id, m.text, m.embedding <=> q.embedding AS distance
    FROM memories AS m
    WHERE m.tenant_id = %(tenant)s
      AND m.embedding IS NOT NULL
      AND (%(exclude_conversation)s::uuid IS NULL
           OR m.conversation_id IS DISTINCT FROM %(exclude_conversation)s::uuid)
    ORDER BY m.embedding <=> q.embedding
    LIMIT %(k)s
) AS n
ORDER BY q.ord, n.distance;

-- For each new text's vector: the current tenant's most similar stored memories.
-- Feeds novelty (A-MAC gate) and near-duplicate detection in one round trip.
-- The statement names the tenant, and row-level security limits the scan to it too.
--   %(tenant)s                text      the tenant (also elephant.tenant_id)
--   tenant text, exact boolean          the tenant and its way
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
    (SELECT m.id, m.text, m.embedding <=> q.embedding AS distance  -- index
     FROM memories AS m
     WHERE NOT %(exact)s
       AND m.tenant_id = %(tenant)s
       AND m.embedding IS NOT NULL
       AND (%(exclude_conversation)s::uuid IS NULL
            OR m.conversation_id IS DISTINCT FROM %(exclude_conversation)s::uuid)
     ORDER BY m.embedding <=> q.embedding
     LIMIT %(k)s)
    UNION ALL
    SELECT m.id, m.text, near.distance  -- exact: the nearest ids, then their rows
    FROM (SELECT m.id, m.embedding <=> q.embedding AS distance
          FROM memories AS m
          WHERE %(exact)s
            AND m.tenant_id = %(tenant)s
            AND m.embedding IS NOT NULL
            AND (%(exclude_conversation)s::uuid IS NULL
                 OR m.conversation_id IS DISTINCT FROM %(exclude_conversation)s::uuid)
          ORDER BY (m.embedding <=> q.embedding) + 0
          LIMIT %(k)s) AS near
    JOIN memories AS m ON m.id = near.id AND m.tenant_id = %(tenant)s
) AS n
ORDER BY q.ord, n.distance;

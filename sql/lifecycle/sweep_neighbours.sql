-- Dedup sweep (app/services/lifecycle/sweep.py): older notes of the same source as one
-- note, nearest first (HNSW, iterative scan where there is one), with their cosine
-- similarity.
-- Parameters: tenant, embedding, source, created_at and id (the note's: only older ones),
-- k (how many).
SELECT n.id::text, n.text, 1 - (n.embedding <=> %(embedding)s) AS similarity
FROM memories AS n
WHERE n.tenant_id = %(tenant)s AND n.kind = 'note' AND n.source = %(source)s
  AND n.embedding IS NOT NULL
  AND (n.created_at, n.id) < (%(created_at)s, %(id)s::uuid)
ORDER BY n.embedding <=> %(embedding)s
LIMIT %(k)s

-- Active facts about the same subject, most similar first: the candidates a new
-- fact may contradict.
--   %(subject)s text, %(embedding)s vector, %(exclude)s uuid (the new fact), %(k)s int
SELECT f.id,
       f.text,
       f.valid_from,
       f.recorded_at,
       1 - (f.embedding <=> %(embedding)s) AS similarity
FROM facts AS f
WHERE f.status = 'active'
  AND f.expired_at IS NULL
  AND lower(f.subject) = lower(%(subject)s)
  AND f.id <> %(exclude)s
  AND f.embedding IS NOT NULL
ORDER BY f.embedding <=> %(embedding)s
LIMIT %(k)s;

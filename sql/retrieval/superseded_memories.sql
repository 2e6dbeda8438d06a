-- Which of the found memories are superseded: every fact extracted from them (retracted
-- ones aside) was superseded by a newer fact (app/services/facts/contradictions.py
-- closes the older fact: status 'superseded', superseded_by the newer one). For each,
-- the memories and the facts that superseded them, so search can rank the memory
-- below them for questions about the present and mark it (app/services/retrieval/
-- supersession.py). A memory with no facts is never superseded here.
-- Parameters: tenant text; memories uuid[] (the memories among the search's results).
SELECT f.memory_id,
       array_agg(DISTINCT newer.memory_id) FILTER (WHERE newer.memory_id IS NOT NULL)
           AS newer_memories,
       array_agg(DISTINCT newer.id) FILTER (WHERE newer.id IS NOT NULL) AS newer_facts
FROM facts AS f
LEFT JOIN facts AS newer
       ON newer.tenant_id = %(tenant)s AND newer.id = f.superseded_by
WHERE f.tenant_id = %(tenant)s
  AND f.memory_id = ANY (%(memories)s::uuid[])
  AND f.status <> 'retracted'
GROUP BY f.memory_id
HAVING bool_and(f.status = 'superseded' AND f.superseded_by IS NOT NULL)

-- A fact's history (app/services/facts/history.py): the contradictions that touch any
-- fact of its supersession chain (sql/facts/fact_chain.sql), newest first.
-- Parameters: tenant; ids (uuid[]: the fact and its chain).
SELECT c.id, o.id::text, o.text, n.id::text, n.text, c.detector, c.score, c.reason, c.created_at
  FROM contradictions AS c
  JOIN facts AS o ON o.tenant_id = c.tenant_id AND o.id = c.older_fact_id
  JOIN facts AS n ON n.tenant_id = c.tenant_id AND n.id = c.newer_fact_id
 WHERE c.tenant_id = %(tenant)s
   AND (c.older_fact_id = ANY (%(ids)s::uuid[]) OR c.newer_fact_id = ANY (%(ids)s::uuid[]))
 ORDER BY c.id DESC

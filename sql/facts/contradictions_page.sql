-- GET /contradictions (app/services/facts/contradictions.py, list_contradictions): the
-- tenant's contradictions, newest first (by id), each with its older and newer fact.
-- Parameters: tenant; before (bigint: only those older than this id; NULL: from the
-- newest); limit (int).
SELECT c.id, c.detector, c.score, c.reason, c.created_at,
       o.id, o.text, o.valid_from, o.valid_to, o.status,
       n.id, n.text, n.valid_from, n.status
  FROM contradictions c
  JOIN facts o ON o.tenant_id = c.tenant_id AND o.id = c.older_fact_id
  JOIN facts n ON n.tenant_id = c.tenant_id AND n.id = c.newer_fact_id
 WHERE c.tenant_id = %(tenant)s AND (%(before)s::bigint IS NULL OR c.id < %(before)s)
 ORDER BY c.id DESC
 LIMIT %(limit)s

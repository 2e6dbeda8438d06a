-- Passages backfill (app/services/memory/passages.py, backfill): turns stored without
-- passages (the embedder was down, or they were stored before passages existed), oldest
-- first.
-- Parameters: tenant; limit (int).
SELECT t.conversation_id, t.seq, t.speaker, t.text, t.occurred_at
  FROM turns AS t
 WHERE t.tenant_id = %(tenant)s
   AND NOT EXISTS (SELECT 1 FROM passages AS p
                    WHERE p.tenant_id = t.tenant_id AND p.turn_id = t.id)
 ORDER BY t.id
 LIMIT %(limit)s

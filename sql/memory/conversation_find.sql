-- One conversation's summary, named by its id or by the caller's id for it
-- (app/services/memory/transcripts.py, GET /conversations/{id}); its own id wins when
-- both match.
--   %(tenant)s  text       the tenant
--   %(name)s    text       what the caller named it by
--   %(uuid)s    uuid|NULL  the same, when it is a uuid
SELECT
    {conversation_summary}
  FROM conversations AS c
 WHERE c.tenant_id = %(tenant)s
   AND (c.external_id = %(name)s OR c.id = %(uuid)s)
 ORDER BY c.id = %(uuid)s DESC
 LIMIT 1

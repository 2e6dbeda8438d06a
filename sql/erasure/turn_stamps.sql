-- Erasure (app/services/access/erasure/rows.py): the transaction timestamps of the turns
-- of the conversations that go, with their source, read before they go. Windows the gate
-- rejected before migration 0011 are linked to their conversation by nothing else
-- (sql/erasure/delete_admission_log.sql).
-- Parameters: tenant; convs (uuid[]).
SELECT DISTINCT t.created_at, c.source
  FROM turns AS t
  JOIN conversations AS c ON c.tenant_id = t.tenant_id AND c.id = t.conversation_id
 WHERE c.tenant_id = %(tenant)s AND c.id = ANY(%(convs)s::uuid[])

-- Erasure of a subject (app/services/access/erasure/rows.py): the conversations, among
-- those whose turns name the subject, every one of whose turns is going. They go too.
-- Parameters: tenant; convs (uuid[]) the conversations of the turns that go; turns
-- (bigint[]) the turns that go.
SELECT c.id
  FROM conversations AS c
 WHERE c.tenant_id = %(tenant)s
   AND c.id = ANY(%(convs)s::uuid[])
   AND NOT EXISTS (SELECT 1
                     FROM turns AS t
                    WHERE t.tenant_id = c.tenant_id
                      AND t.conversation_id = c.id
                      AND t.id <> ALL(%(turns)s))

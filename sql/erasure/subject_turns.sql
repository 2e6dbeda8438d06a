-- Erasure of a subject (app/services/access/erasure/rows.py): turns whose speaker, text
-- or any string of their metadata names the subject, with their conversation (one left
-- without turns goes too, sql/erasure/emptied_conversations.sql).
-- Parameters: tenant; p the subject's pattern (names_pattern).
SELECT id, conversation_id
  FROM turns
 WHERE tenant_id = %(tenant)s
   AND (%(p)s::text IS NOT NULL
        AND (speaker ~* %(p)s
             OR text ~* %(p)s
             OR EXISTS (SELECT 1
                          FROM jsonb_path_query(metadata, 'strict $.** ? (@.type() == "string")') AS v (s)
                         WHERE v.s #>> '{}' ~* %(p)s)))

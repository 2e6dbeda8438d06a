-- Erasure of a subject (app/services/access/erasure/rows.py): conversations whose own id
-- (external_id) or any string of their metadata names the subject. They go whole.
-- Parameters: tenant; p the subject's names as a whole-word, any-case regular expression
-- (names_pattern). Values only, never JSON keys: erasing "Claude" must not take every
-- row scored by claude-haiku.
SELECT id
  FROM conversations
 WHERE tenant_id = %(tenant)s
   AND (%(p)s::text IS NOT NULL
        AND (external_id ~* %(p)s
             OR EXISTS (SELECT 1
                          FROM jsonb_path_query(metadata, 'strict $.** ? (@.type() == "string")') AS v (s)
                         WHERE v.s #>> '{}' ~* %(p)s)))

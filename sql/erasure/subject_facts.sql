-- Erasure of a subject (app/services/access/erasure/rows.py): facts whose subject, text,
-- any string of their metadata or the name of one of their entities names the subject,
-- and facts linked to the subject's graph entities.
-- Parameters: tenant; p the subject's pattern; keys (text[]) the entity keys of the
-- subject's names and of its vertices.
SELECT id
  FROM facts
 WHERE tenant_id = %(tenant)s
   AND (%(p)s::text IS NOT NULL
        AND (subject ~* %(p)s
             OR text ~* %(p)s
             OR EXISTS (SELECT 1
                          FROM jsonb_path_query(metadata, 'strict $.** ? (@.type() == "string")') AS v (s)
                         WHERE v.s #>> '{}' ~* %(p)s)
             OR EXISTS (SELECT 1
                          FROM jsonb_path_query(entities, 'lax $[*].name') AS v (s)
                         WHERE v.s #>> '{}' ~* %(p)s)))
UNION
SELECT fact_id
  FROM fact_entities
 WHERE tenant_id = %(tenant)s AND entity_key = ANY(%(keys)s)

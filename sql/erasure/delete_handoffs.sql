-- Erasure (app/services/access/erasure/rows.py), step 11 of 13: session handoffs of a
-- conversation that goes, and, for a subject, those whose project, summary, generator
-- note (the part after "fallback: ", which may quote the text) or any string of their
-- decisions, open questions, next steps or metadata names them.
-- Parameters: tenant; convs (uuid[]); p the subject's pattern, NULL when not a subject.
DELETE FROM handoffs AS x
 WHERE x.tenant_id = %(tenant)s
   AND (x.conversation_id = ANY(%(convs)s::uuid[])
        OR (%(p)s::text IS NOT NULL
            AND (x.project ~* %(p)s
                 OR x.summary ~* %(p)s
                 OR coalesce(substring(x.generator from 'fallback: (.*)$'), '') ~* %(p)s
                 OR EXISTS (SELECT 1
                              FROM jsonb_path_query(x.decisions, 'strict $.** ? (@.type() == "string")') AS v (s)
                             WHERE v.s #>> '{}' ~* %(p)s)
                 OR EXISTS (SELECT 1
                              FROM jsonb_path_query(x.open_questions, 'strict $.** ? (@.type() == "string")') AS v (s)
                             WHERE v.s #>> '{}' ~* %(p)s)
                 OR EXISTS (SELECT 1
                              FROM jsonb_path_query(x.next_steps, 'strict $.** ? (@.type() == "string")') AS v (s)
                             WHERE v.s #>> '{}' ~* %(p)s)
                 OR EXISTS (SELECT 1
                              FROM jsonb_path_query(x.metadata, 'strict $.** ? (@.type() == "string")') AS v (s)
                             WHERE v.s #>> '{}' ~* %(p)s))))

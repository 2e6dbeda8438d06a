-- Erasure (app/services/access/erasure/rows.py), step 10 of 13: queued and finished jobs
-- about what goes. A job whose payload holds the id of a fact, memory or conversation
-- that goes; an extraction job over a range of turns holding one that goes, when the job
-- is done or failed or no turn of its range is left; and, for a subject, a job whose
-- last error or any string of its payload names them.
-- Runs after the turns: a queued extraction job over a range that keeps other turns
-- stays, so those turns still get their facts (its payload holds ids and numbers).
-- Parameters: tenant; ids (text[]) the ids of the facts, memories and conversations that
-- go; turn_convs (text[]) and turn_seqs (int[]) the conversation and position of each
-- turn that goes; p the subject's pattern, NULL when not a subject.
DELETE FROM jobs AS x
 WHERE x.tenant_id = %(tenant)s
   AND (EXISTS (SELECT 1 FROM jsonb_each_text(x.payload) AS kv
                 WHERE kv.value = ANY(%(ids)s::text[]))
        OR EXISTS (
            SELECT 1 FROM unnest(%(turn_convs)s::text[], %(turn_seqs)s::int[]) AS r (c, s)
             WHERE x.payload ->> 'conversation_id' = r.c
               AND r.s BETWEEN (x.payload ->> 'seq_from')::int AND (x.payload ->> 'seq_to')::int
               AND (x.status IN ('done', 'failed') OR NOT EXISTS (
                   SELECT 1 FROM turns AS t
                    WHERE t.tenant_id = x.tenant_id
                      AND t.conversation_id::text = r.c
                      AND t.seq BETWEEN (x.payload ->> 'seq_from')::int
                                    AND (x.payload ->> 'seq_to')::int)))
        OR (%(p)s::text IS NOT NULL
            AND (x.last_error ~* %(p)s
                 OR EXISTS (SELECT 1
                              FROM jsonb_path_query(x.payload, 'strict $.** ? (@.type() == "string")') AS v (s)
                             WHERE v.s #>> '{}' ~* %(p)s))))

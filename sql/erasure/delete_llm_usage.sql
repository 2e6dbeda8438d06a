-- Erasure (app/services/access/erasure/rows.py), step 12 of 13: for a subject, the LLM
-- calls whose error names them (an error may quote the text sent). Other LLM usage rows
-- hold no memory text and stay.
-- Parameters: tenant; p the subject's pattern, NULL when not a subject (then none goes).
DELETE FROM llm_usage AS x
 WHERE x.tenant_id = %(tenant)s
   AND (%(p)s::text IS NOT NULL AND (x.error ~* %(p)s))

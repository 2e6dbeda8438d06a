-- The gate's log (app/services/gate/admit.py, log_decisions): one decision per row,
-- executemany. A rejected text is kept whole (rejected_text) so an operator can still
-- admit it (app/services/gate/decisions.py); the other decisions keep a preview only.
-- Parameters, in order: tenant; memory (uuid or NULL); kind; source; text_preview;
-- content_hash; relevance, novelty, specificity, composite, threshold (real); decision;
-- reason; scorer; rejected_text; conversation (uuid or NULL); turn_start, turn_end.
INSERT INTO admission_log (tenant_id, memory_id, kind, source, text_preview, content_hash,
                           relevance, novelty, specificity, composite, threshold, decision,
                           reason, scorer, rejected_text, conversation_id, turn_start,
                           turn_end)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)

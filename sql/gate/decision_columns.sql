-- Fragment: the columns of one gate decision, in the order app/services/gate/decisions.py
-- reads them (GateDecision's fields but ``admittable``, which is derived). Spliced in
-- where a line holds only {decision_columns}; every reader of admission_log's rows
-- (the decisions page, a memory's decisions, the gate metrics' recent rejections)
-- selects these, so a row is read one way.
id, decision, kind, source, memory_id::text, text_preview, relevance, novelty,
specificity, composite, threshold, reason, scorer, created_at, rejected_text,
conversation_id::text, turn_start, turn_end

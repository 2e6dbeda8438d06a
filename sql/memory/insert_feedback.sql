-- Feedback (app/services/memory/feedback.py): the feedback's own row, for the record.
--   %(tenant)s text; %(memory)s, %(fact)s uuid (one of them NULL); %(helpful)s bool;
--   %(delta)s real; %(importance)s real (the target's importance after it)
INSERT INTO feedback (tenant_id, memory_id, fact_id, helpful, delta, importance_after)
VALUES (%(tenant)s, %(memory)s, %(fact)s, %(helpful)s, %(delta)s, %(importance)s)

-- Contradiction detection (app/services/facts/contradictions.py, _close): a newer fact
-- contradicts an older one. A pair recorded already inserts nothing (and returns no
-- row), so the older fact is not closed twice.
-- Parameters: tenant; older, newer (uuid: the facts); detector (text); score (real);
-- reason (text).
INSERT INTO contradictions (tenant_id, older_fact_id, newer_fact_id, detector, score, reason)
VALUES (%(tenant)s, %(older)s, %(newer)s, %(detector)s, %(score)s, %(reason)s)
    ON CONFLICT DO NOTHING
RETURNING id

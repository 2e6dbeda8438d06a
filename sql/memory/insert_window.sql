-- Commit (app/services/memory/commit.py, _insert_windows): a conversation window the
-- gate admitted, one row each (executemany, returning each id). The same window text
-- stored since it was screened (a concurrent commit) is not stored twice: it is seen
-- once more and its id returned.
--   %(tenant)s, %(text)s, %(embedding)s (vector or NULL), %(source)s,
--   %(conversation)s (uuid), %(turn_start)s, %(turn_end)s (int: the turns it covers),
--   %(source_turn_ids)s (text[]: the caller's turn ids), %(event_at)s (timestamptz or
--   NULL), %(digest)s (content hash)
INSERT INTO memories (tenant_id, kind, text, embedding, source, conversation_id,
                      turn_start, turn_end, source_turn_ids, event_at, content_hash)
VALUES (%(tenant)s, 'window', %(text)s, %(embedding)s, %(source)s, %(conversation)s,
        %(turn_start)s, %(turn_end)s, %(source_turn_ids)s, %(event_at)s, %(digest)s)
    ON CONFLICT (tenant_id, content_hash) DO UPDATE
   SET seen_count = memories.seen_count + 1, last_seen_at = now()
RETURNING id

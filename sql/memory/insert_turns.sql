-- Commit (app/services/memory/commit.py, _insert_turns): every turn of a conversation,
-- verbatim, one row each (executemany, pipelined: COPY would be faster but PostgreSQL
-- does not allow COPY FROM into tables with row-level security).
--   %(tenant)s, %(conversation)s (uuid), %(seq)s (int: its position, after the turns
--   already stored), %(speaker)s, %(text)s, %(occurred_at)s (timestamptz or NULL),
--   %(source_turn_id)s (the caller's turn id or NULL)
INSERT INTO turns (tenant_id, conversation_id, seq, speaker, text, occurred_at,
                   source_turn_id)
VALUES (%(tenant)s, %(conversation)s, %(seq)s, %(speaker)s, %(text)s, %(occurred_at)s,
        %(source_turn_id)s)

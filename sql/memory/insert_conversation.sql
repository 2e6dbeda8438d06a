-- Commit (app/services/memory/commit.py, _upsert_conversation): a conversation seen
-- for the first time (a known external_id appends to the stored one instead).
--   %(tenant)s        text         the tenant
--   %(external_id)s   text|NULL    the caller's conversation id
--   %(source)s        text         where it came from
--   %(session_date)s  timestamptz  the anchor for relative dates, or NULL
--   %(metadata)s      jsonb        the caller's metadata
INSERT INTO conversations (tenant_id, external_id, source, session_date, metadata)
VALUES (%(tenant)s, %(external_id)s, %(source)s, %(session_date)s, %(metadata)s)
RETURNING id

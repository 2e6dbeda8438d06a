-- Commit (app/services/memory/commit.py, commit_note): a note the gate admitted,
-- stored with its vector (NULL while the embedder is down: an embed job fills it in).
--   %(tenant)s       text         the tenant
--   %(text)s         text         the note, verbatim
--   %(embedding)s    vector|NULL  its document vector
--   %(source)s       text         where it came from
--   %(importance)s   real         0-100 (50 when the caller gave none)
--   %(event_at)s     timestamptz  when it happened (occurred_at), or NULL
--   %(digest)s       text         content hash (exact dedup)
--   %(metadata)s     jsonb        the caller's metadata
INSERT INTO memories (tenant_id, kind, text, embedding, source, importance, event_at,
                      content_hash, metadata)
VALUES (%(tenant)s, 'note', %(text)s, %(embedding)s, %(source)s, %(importance)s,
        %(event_at)s, %(digest)s, %(metadata)s)
RETURNING id

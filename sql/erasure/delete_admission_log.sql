-- Erasure (app/services/access/erasure/rows.py), step 5 of 13: the gate's decisions about
-- what goes. A decision on a memory that goes, on a window of a conversation that goes,
-- on the same content (its hash), of the source that goes; and, for a subject, one whose
-- preview, rejected text, reason or scorer note names them. The scorer note is
-- "offline (fallback: provider failed: error)": only the error may quote the text, the
-- rest names our provider, so only the part after "fallback: " is searched.
-- A conversation's windows name it (migration 0011); those logged before that are
-- linked to it by nothing but the transaction that logged them: kind window, its
-- source, the transaction timestamp of its turns (stamps and stamp_sources).
-- Parameters: tenant; memories, convs (uuid[]); hashes (text[]) the content hashes of the
-- memories that go; source (NULL unless the target is a source); stamps (timestamptz[])
-- and stamp_sources (text[]); p the subject's pattern, NULL when not a subject.
DELETE FROM admission_log AS x
 WHERE x.tenant_id = %(tenant)s
   AND (x.memory_id = ANY(%(memories)s::uuid[])
        OR x.conversation_id = ANY(%(convs)s::uuid[])
        OR x.content_hash = ANY(%(hashes)s)
        OR x.source = %(source)s
        OR (x.kind = 'window' AND (x.created_at, x.source) IN
            (SELECT * FROM unnest(%(stamps)s::timestamptz[], %(stamp_sources)s::text[])))
        OR (%(p)s::text IS NOT NULL
            AND (x.text_preview ~* %(p)s
                 OR x.rejected_text ~* %(p)s
                 OR x.reason ~* %(p)s
                 OR coalesce(substring(x.scorer from 'fallback: (.*)$'), '') ~* %(p)s)))

-- Fact extraction from a note (app/services/facts/pipeline.py, _note_source): its text,
-- when it happened (its event date, else when it was stored) and its source.
-- A replaced version of a store item gives none (its facts would be current).
-- Parameters: tenant; memory (uuid).
SELECT text, coalesce(event_at, created_at), source
  FROM memories
 WHERE tenant_id = %(tenant)s AND id = %(memory)s
   AND superseded_at IS NULL  -- a store item replaced before its facts were extracted

-- A job about to write (app/services/jobs/sources.py, hold_notes): the notes it read that
-- are still there, and with current also still current (not replaced or deleted as a
-- store item), locked FOR SHARE until the job's transaction ends. A store put or delete
-- supersedes a note with an UPDATE and a dedup sweep deletes it, both conflicting with
-- FOR SHARE: either they ended before this statement (the note is not returned) or they
-- wait until the job's rows are committed, and then close or remove them.
-- Parameters: tenant; memories (uuid[]); current (boolean).
SELECT id
  FROM memories
 WHERE tenant_id = %(tenant)s AND id = ANY(%(memories)s::uuid[])
   AND (NOT %(current)s OR superseded_at IS NULL)
   FOR SHARE

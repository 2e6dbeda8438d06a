-- A job about to write (app/services/jobs/sources.py, hold_notes): the notes it read that
-- are still there, and with current also still current (not replaced or deleted as a
-- store item), locked FOR KEY SHARE until the job's transaction ends. A store put or
-- delete locks the note FOR UPDATE before it supersedes it (store/lock_version.sql) and
-- a sweep or an erasure DELETEs it, all conflicting with KEY SHARE: either they ended
-- before this statement (the note is not returned) or they wait until the job's rows are
-- committed, and then close or remove them. Other updates of the note (its seen count,
-- feedback) do not wait for the job.
-- Parameters: tenant; memories (uuid[]); current (boolean).
SELECT id
  FROM memories
 WHERE tenant_id = %(tenant)s AND id = ANY(%(memories)s::uuid[])
   AND (NOT %(current)s OR superseded_at IS NULL)
   FOR KEY SHARE

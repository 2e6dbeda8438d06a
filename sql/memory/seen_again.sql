-- Commit (app/services/memory/commit.py, _bump): a duplicate is never stored twice;
-- the memory it duplicates is seen once more instead.
--   %(tenant)s  text  the tenant
--   %(memory)s  uuid  the memory duplicated
UPDATE memories
   SET seen_count = seen_count + 1, last_seen_at = now()
 WHERE tenant_id = %(tenant)s AND id = %(memory)s

-- Commit (app/services/memory/commit.py, _enqueue_backfill): is an embed job already
-- queued or running for the tenant? Texts stored while the embedder was down need
-- one, and one is enough.
--   %(tenant)s  text  the tenant
SELECT 1
  FROM jobs
 WHERE tenant_id = %(tenant)s AND kind = 'embed_memories' AND status IN ('queued', 'running')

-- Job queue (app/services/jobs/queue.py, complete): a job done: its lease and last error
-- cleared.
-- Parameters, in order: tenant, job id.
UPDATE jobs SET status = 'done', finished_at = now(), updated_at = now(),
last_error = NULL, lease_expires_at = NULL WHERE tenant_id = %s AND id = %s

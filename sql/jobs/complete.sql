-- Job queue (app/services/jobs/queue.py, complete): a job done: its lease cleared, its
-- last error cleared, or set to why it wrote nothing (its source was deleted, replaced or
-- erased while it ran: app/services/jobs/sources.py).
-- Parameters, in order: reason (text or NULL), tenant, job id.
UPDATE jobs SET status = 'done', finished_at = now(), updated_at = now(),
last_error = %s, lease_expires_at = NULL WHERE tenant_id = %s AND id = %s

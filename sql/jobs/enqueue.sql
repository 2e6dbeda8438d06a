-- Job queue (app/services/jobs/queue.py, enqueue): a new job for the tenant; its id.
-- Parameters, in order: tenant, kind, payload (JSON text), max_attempts.
INSERT INTO jobs (tenant_id, kind, payload, max_attempts) VALUES (%s, %s, %s, %s)
RETURNING id

-- Maintenance run now (app/services/lifecycle/run.py, run_now): a job of the kind, one
-- attempt, unless one is queued or running already (the unique index on active jobs):
-- its id, or no row.
-- Parameters, in order: tenant, job kind, payload (JSON text), max_attempts.
INSERT INTO jobs (tenant_id, kind, payload, max_attempts) VALUES (%s, %s, %s, %s)
ON CONFLICT DO NOTHING RETURNING id

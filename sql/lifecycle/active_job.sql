-- Maintenance run now (app/services/lifecycle/run.py, run_now): the job of the kind
-- queued or running already (that one is this run).
-- Parameters, in order: tenant, job kind.
SELECT id FROM jobs
WHERE tenant_id = %s AND kind = %s AND status IN ('queued', 'running')

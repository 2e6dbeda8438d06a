-- Maintenance (app/services/lifecycle/maintenance.py, record): one run's report, finished
-- now.
-- Parameters, in order: tenant, kind, job id (or null), triggered_by, started_at, report
-- (JSON text).
INSERT INTO maintenance_runs (tenant_id, kind, job_id, triggered_by, started_at,
report) VALUES (%s, %s, %s, %s, %s, %s::jsonb)

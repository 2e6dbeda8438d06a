-- Maintenance (app/services/lifecycle/maintenance.py, last_report): the report of the
-- latest run a job made.
-- Parameters, in order: tenant, job id.
SELECT report FROM maintenance_runs WHERE tenant_id = %s AND job_id = %s
ORDER BY id DESC LIMIT 1

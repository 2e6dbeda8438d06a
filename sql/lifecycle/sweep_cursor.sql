-- Dedup sweep (app/services/lifecycle/sweep.py, last_cursor): where the tenant's last
-- sweep stopped (its report's cursor).
-- Parameters, in order: tenant.
SELECT report -> 'detail' ->> 'cursor' FROM maintenance_runs
WHERE tenant_id = %s AND kind = 'dedup' ORDER BY finished_at DESC, id DESC LIMIT 1

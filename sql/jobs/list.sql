-- Job queue (app/services/jobs/queue.py, list_jobs): the tenant's jobs newest first (by
-- id), optionally of one status and only older than a given id (the next page).
-- Parameters: tenant, state (or null), before (or null), limit.
SELECT id, kind, status, attempts, max_attempts, run_after, last_error, created_at,
finished_at FROM jobs WHERE tenant_id = %(tenant)s
AND (%(state)s::text IS NULL OR status = %(state)s)
AND (%(before)s::bigint IS NULL OR id < %(before)s) ORDER BY id DESC LIMIT %(limit)s

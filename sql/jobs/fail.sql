-- Job queue (app/services/jobs/queue.py, fail): a job that failed: queued again after the
-- backoff delay, or failed for good on its last attempt (finished then); unlocked, its
-- error kept.
-- Parameters, in order: status ('queued' or 'failed'), error (cut to 2000 characters),
-- delay (seconds), final (boolean), tenant, job id.
UPDATE jobs SET status = %s, last_error = %s, updated_at = now(),
locked_by = NULL, locked_at = NULL, lease_expires_at = NULL,
run_after = now() + make_interval(secs => %s),
finished_at = CASE WHEN %s THEN now() END WHERE tenant_id = %s AND id = %s

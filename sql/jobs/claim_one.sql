-- Job queue (app/services/jobs/queue.py, claim_one): one given queued job of the tenant
-- claimed now (?wait=true), unless a worker has it locked; the job, or no row.
-- Parameters: worker, lease (seconds), tenant, id.
UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = %(worker)s,
locked_at = now(), lease_expires_at = now() + make_interval(secs => %(lease)s),
updated_at = now()
WHERE tenant_id = %(tenant)s AND id = (SELECT id FROM jobs
  WHERE tenant_id = %(tenant)s AND id = %(id)s AND status = 'queued'
  FOR UPDATE SKIP LOCKED)
RETURNING id, tenant_id, kind, payload, attempts, max_attempts

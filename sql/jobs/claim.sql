-- Job queue (app/services/jobs/queue.py, claim): up to `limit` due jobs of any tenant
-- claimed by this worker for a lease, through elephant_claim_jobs() (SKIP LOCKED).
-- Parameters, in order: worker name, limit, lease (seconds).
SELECT id, tenant_id, kind, payload, attempts, max_attempts
FROM elephant_claim_jobs(%s, %s, %s)

-- Doctor's queue and backlog check (app/services/ops/doctor.py), over the whole database
-- as the migrator: failed jobs, running jobs whose lease ran out (a worker died?),
-- queued jobs, memories and facts without a vector, turns without their passages.
-- No parameters.
SELECT (SELECT count(*) FROM jobs WHERE status = 'failed'),
       (SELECT count(*) FROM jobs WHERE status = 'running'
           AND lease_expires_at < now()),
       (SELECT count(*) FROM jobs WHERE status = 'queued'),
       (SELECT count(*) FROM memories WHERE embedding IS NULL),
       (SELECT count(*) FROM facts WHERE embedding IS NULL),
       (SELECT count(*) FROM turns AS t WHERE NOT EXISTS
           (SELECT 1 FROM passages AS p WHERE p.turn_id = t.id))

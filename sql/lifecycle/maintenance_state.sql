-- Maintenance state (app/services/lifecycle/maintenance.py): per maintenance kind, over
-- every tenant (as the migrator): the last run done, the jobs queued, running and failed,
-- how many tenants are due (no job queued or running and none within its interval) and
-- how many queued jobs are over an hour late.
-- Parameters, in order: kinds, their job kinds (text[]), their intervals (float8[],
-- seconds; 0 for none).
WITH ids AS (SELECT id FROM elephant_maintenance_tenants() AS t(id))
SELECT k.kind,
       (SELECT max(j.finished_at) FROM jobs AS j
         WHERE j.kind = k.job AND j.status = 'done'),
       (SELECT count(*) FROM jobs AS j WHERE j.kind = k.job AND j.status = 'queued'),
       (SELECT count(*) FROM jobs AS j WHERE j.kind = k.job AND j.status = 'running'),
       (SELECT count(*) FROM jobs AS j WHERE j.kind = k.job AND j.status = 'failed'),
       CASE WHEN k.every > 0 THEN
           (SELECT count(*) FROM ids WHERE NOT EXISTS (
                SELECT 1 FROM jobs AS j WHERE j.tenant_id = ids.id AND j.kind = k.job
                   AND (j.status IN ('queued', 'running')
                        OR j.created_at > now() - make_interval(secs => k.every))))
       ELSE 0 END,
       (SELECT count(*) FROM jobs AS j WHERE j.kind = k.job AND j.status = 'queued'
           AND j.run_after < now() - interval '1 hour')
FROM unnest(%s::text[], %s::text[], %s::float8[]) AS k(kind, job, every)

-- Doctor's access check (app/services/ops/doctor.py), as the migrator: the live API keys
-- (not revoked, not expired) of every tenant, and the tables of tenant graphs (AGE)
-- without forced row-level security.
-- No parameters.
SELECT (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL
               AND (expires_at IS NULL OR expires_at > now())),
       (SELECT count(*) FROM graphs AS g
          JOIN pg_namespace AS n ON n.nspname = g.graph_name
          JOIN pg_class AS c ON c.relnamespace = n.oid
         WHERE c.relkind = 'r' AND NOT (c.relrowsecurity AND c.relforcerowsecurity))

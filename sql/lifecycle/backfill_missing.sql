-- Backfill (app/services/lifecycle/backfill.py, _missing): what is still to fill for the
-- tenant: memories and facts without a vector, turns without passages (the report's
-- missing_before and missing_after).
-- Parameters: tenant.
SELECT (SELECT count(*) FROM memories WHERE tenant_id = %(tenant)s AND embedding IS NULL),
       (SELECT count(*) FROM facts WHERE tenant_id = %(tenant)s AND embedding IS NULL),
       (SELECT count(*) FROM turns AS t
         WHERE t.tenant_id = %(tenant)s
           AND NOT EXISTS (SELECT 1 FROM passages AS p
                            WHERE p.tenant_id = t.tenant_id AND p.turn_id = t.id))

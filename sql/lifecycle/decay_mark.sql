-- Decay (app/services/lifecycle/decay.py): the crossing rows marked: dormant_at set to
-- now() when they fell below the floor, cleared (NULL) when they rose again; a row per
-- row changed. The code composes in {crossing} (sql/lifecycle/decay_crossing.sql),
-- {table} and {value}.
-- Parameters: tenant, and the crossing's.
WITH c AS ({crossing})
UPDATE {table} AS u
   SET dormant_at = {value}
  FROM c
 WHERE u.tenant_id = %(tenant)s AND u.id = c.id
RETURNING 1

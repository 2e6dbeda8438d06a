-- Decay (app/services/lifecycle/decay.py): a batch of the tenant's rows whose activation
-- crossed the dormant floor: below it and not yet dormant, or at or above it and dormant.
-- Activation is elephant_activation() over the row and its access_stats row `u`. The
-- code composes in {table} (memories or facts, aliased `t`), {state} (whether dormant_at
-- is set), {scope} (which rows decay: facts only while open), {activation} (the call,
-- lifecycle/activation.py, sql_call) and {test} (< or >=).
-- Parameters: tenant, floor, batch, and the activation curve's (ActivationParams.sql_args).
SELECT t.id
  FROM {table} AS t
  LEFT JOIN access_stats AS u ON u.tenant_id = t.tenant_id AND u.item_id = t.id
 WHERE t.tenant_id = %(tenant)s AND {state} AND {scope}
   AND {activation} {test} %(floor)s
 LIMIT %(batch)s

-- Backfill (app/services/lifecycle/backfill.py, fill_vectors): a batch of the tenant's
-- rows without a vector, oldest first, with the text their vector is made from. The code
-- composes in {table} (memories or facts) and {text}, its text column.
-- Parameters, in order: tenant, the batch size.
SELECT id, {text}
  FROM {table}
 WHERE tenant_id = %s AND embedding IS NULL
 ORDER BY created_at
 LIMIT %s

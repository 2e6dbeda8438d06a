-- An import without vectors (app/services/transfer/importer.py, _pool_windows): the
-- tenant's conversation windows, whose vectors are pooled from their turns' passages
-- once those are made.
--   %(tenant)s
SELECT id::text, text
  FROM memories
 WHERE tenant_id = %(tenant)s
   AND kind = 'window'
 ORDER BY id

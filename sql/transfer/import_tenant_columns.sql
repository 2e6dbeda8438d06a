-- Import (app/services/transfer/importer.py, _tenant_settings): the columns of this
-- database's tenants table (generated ones left out), against which the file's tenant
-- row is checked.
-- Parameters: none.
SELECT attname
  FROM pg_catalog.pg_attribute
 WHERE attrelid = 'tenants'::regclass AND attnum > 0 AND NOT attisdropped
   AND attgenerated = ''

-- Import (app/services/transfer/importer.py, _tenant_settings): the tenant's name and
-- settings (owner, gate threshold) taken from the file's tenant row. The code composes
-- in, with psycopg.sql, the columns carried over and their values from the row `r`.
-- Parameters: section (the tenant section's name), tenant.
UPDATE tenants
   SET ({columns}) = (SELECT {values}
                        FROM elephant_import_rows AS s
                       CROSS JOIN LATERAL
                             jsonb_populate_record(NULL::tenants, s.line -> 'row') AS r
                       WHERE s.line ->> 'table' = %(section)s)
 WHERE id = %(tenant)s

-- Import (app/services/transfer/importer.py, _record_way): the imported tenant's rows with
-- a vector in its largest vector table, as the tenant-index keeper counts them
-- (sql/db/tenant_sizes.sql), to record the way its vector lanes are served.
-- Parameters (named): tenant.
SELECT greatest(
    (SELECT count(*) FROM memories WHERE tenant_id = %(tenant)s AND embedding IS NOT NULL),
    (SELECT count(*) FROM facts WHERE tenant_id = %(tenant)s AND embedding IS NOT NULL),
    (SELECT count(*) FROM passages WHERE tenant_id = %(tenant)s AND embedding IS NOT NULL))

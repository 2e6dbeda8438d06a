-- A job about to write (app/services/jobs/sources.py, hold_tenant): the tenant row in KEY
-- SHARE mode until the job's transaction ends. An erasure takes FOR UPDATE on this row
-- first (erasure/rows.py, erasure/tenant.py), which conflicts: so an erasure either ended
-- before this statement (what the job read may be gone: the job reads it again) or waits
-- until the job's rows are committed, and then sees and erases them. No row: the tenant
-- was erased. Parameters: tenant.
SELECT 1 FROM tenants WHERE id = %(tenant)s FOR KEY SHARE

-- Store (app/services/store/items.py): one writer at a time per item, until the
-- transaction ends, so two puts of the same key never both become current.
-- Parameters: tenant, namespace (labels joined by '.'), key.
SELECT pg_advisory_xact_lock(hashtextextended(%(tenant)s || chr(31) || %(namespace)s
                                              || chr(31) || %(key)s, 0))

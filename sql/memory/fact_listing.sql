-- Fragment: which facts GET /facts lists (app/services/memory/records.py), one filter
-- for the page and its total. ``as_of``: the facts true at that instant and not
-- retracted, as search's as_of filter (sql/retrieval/fact_filters.sql). Spliced in after
-- a WHERE where a line holds only {fact_listing}.
--   tenant; status, source, memory_id, subject, fact_type, as_of: NULL = off
f.tenant_id = %(tenant)s
AND (%(status)s::text IS NULL OR f.status = %(status)s)
AND (%(source)s::text IS NULL OR f.source = %(source)s)
AND (%(memory_id)s::uuid IS NULL OR f.memory_id = %(memory_id)s)
AND (%(subject)s::text IS NULL OR lower(f.subject) = lower(%(subject)s))
AND (%(fact_type)s::text IS NULL OR f.fact_type = %(fact_type)s)
AND (%(as_of)s::timestamptz IS NULL OR (f.status <> 'retracted'
     AND (f.valid_from IS NULL OR f.valid_from <= %(as_of)s)
     AND (f.valid_to IS NULL OR f.valid_to > %(as_of)s)))

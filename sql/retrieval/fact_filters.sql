-- Filters on facts, and which facts are visible at all: one condition a line, each
-- starting with AND, written against the alias f. Every lane that reads facts splices
-- this file in where a line holds only {fact_filters} (see app/db/resources.py): the
-- facts lane and graph_facts of hybrid_search.sql and the fact halves of
-- keyword_bm25.sql and keyword_tsvector.sql. This header is not spliced.
--
-- A NULL parameter switches its filter off. Parameters:
--   sources text[] | NULL                          only these sources
--   created_after, created_before timestamptz | NULL    created_at in [after, before)
--   event_after, event_before timestamptz | NULL        valid_from in [after, before)
--   as_of timestamptz | NULL, include_expired boolean   visibility, the last condition:
--     as_of given        the facts true at that instant (valid_from <= as_of < valid_to,
--                        an open end unbounded) and not retracted, even those
--                        superseded or expired since; include_expired is ignored
--     include_expired    every fact: superseded and expired ones too
--     neither            current knowledge only: status active and not expired
--   item_namespace text | NULL, item_value jsonb | NULL   only facts of the store items
--     under that namespace ('' any item) whose value contains item_value (as
--     memory_filters.sql)
AND (%(sources)s::text[] IS NULL OR f.source = ANY (%(sources)s::text[]))
AND (%(created_after)s::timestamptz IS NULL OR f.created_at >= %(created_after)s)
AND (%(created_before)s::timestamptz IS NULL OR f.created_at < %(created_before)s)
AND (%(event_after)s::timestamptz IS NULL OR f.valid_from >= %(event_after)s)
AND (%(event_before)s::timestamptz IS NULL OR f.valid_from < %(event_before)s)
AND (CASE
       WHEN %(as_of)s::timestamptz IS NOT NULL THEN
            f.status <> 'retracted'
        AND (f.valid_from IS NULL OR f.valid_from <= %(as_of)s)
        AND (f.valid_to IS NULL OR f.valid_to > %(as_of)s)
       WHEN %(include_expired)s THEN true
       ELSE f.status = 'active' AND f.expired_at IS NULL
     END)
AND ((%(item_namespace)s::text IS NULL AND %(item_value)s::jsonb IS NULL)
     OR EXISTS (SELECT 1 FROM memories AS item
                 WHERE item.tenant_id = %(tenant)s AND item.id = f.memory_id
                   AND item.item_key IS NOT NULL
                   AND (coalesce(%(item_namespace)s, '') = ''
                        OR item.item_namespace = %(item_namespace)s
                        OR left(item.item_namespace, length(%(item_namespace)s) + 1)
                           = %(item_namespace)s || '.')
                   AND (%(item_value)s::jsonb IS NULL OR item.item_value @> %(item_value)s::jsonb)))

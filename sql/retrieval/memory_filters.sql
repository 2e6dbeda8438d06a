-- Filters on memories (conversation windows and notes): one condition a line, each
-- starting with AND, written against the alias m. Every lane that reads memories
-- splices this file in where a line holds only {memory_filters} (see
-- app/db/resources.py): the windows lane of hybrid_search.sql and the memory halves
-- of keyword_bm25.sql and keyword_tsvector.sql. This header is not spliced.
--
-- A NULL parameter switches its filter off. Parameters:
--   sources text[] | NULL                          only these sources
--   memory_kinds text[] | NULL                     only these kinds (window / note)
--   created_after, created_before timestamptz | NULL    created_at in [after, before)
--   event_after, event_before timestamptz | NULL        event_at in [after, before)
--   include_expired boolean                        also superseded notes (replaced or
--                                                  deleted versions of a store item)
--   item_namespace text | NULL                     only store items under this namespace
--                                                  (labels joined by '.'; '' any item)
--   item_value jsonb | NULL                        only store items whose value contains it
AND (%(sources)s::text[] IS NULL OR m.source = ANY (%(sources)s::text[]))
AND (%(memory_kinds)s::text[] IS NULL OR m.kind = ANY (%(memory_kinds)s::text[]))
AND (%(created_after)s::timestamptz IS NULL OR m.created_at >= %(created_after)s)
AND (%(created_before)s::timestamptz IS NULL OR m.created_at < %(created_before)s)
AND (%(event_after)s::timestamptz IS NULL OR m.event_at >= %(event_after)s)
AND (%(event_before)s::timestamptz IS NULL OR m.event_at < %(event_before)s)
AND (%(include_expired)s OR m.superseded_at IS NULL)
AND (%(item_namespace)s::text IS NULL OR (m.item_key IS NOT NULL AND (%(item_namespace)s = '' OR m.item_namespace = %(item_namespace)s OR left(m.item_namespace, length(%(item_namespace)s) + 1) = %(item_namespace)s || '.')))
AND (%(item_value)s::jsonb IS NULL OR m.item_value @> %(item_value)s::jsonb)

-- The keyword lane of hybrid_search.sql with pg_textsearch: true BM25, ordered scans of
-- the bm25 indexes memories_text_bm25 and facts_text_bm25 (score: lower is better).
-- Spliced into the slot {keyword_lane}; runs over q (variant, query) of that statement.
-- This header is not spliced.
--
-- Under row-level security the bm25 index is used as it is: an ordered scan serves an
-- ORDER BY, not a condition, so the non-leakproof rule that keeps `@@` off the GIN
-- index (see keyword_tsvector.sql) does not apply. The tenant policy then filters the
-- scan's rows, and the scan goes on past other tenants' better-scoring documents until
-- the tenant's LIMIT is met (tests/integration/test_search_plans.py proves both).
--
-- Equal scores are common (short facts, repeated words) and the LIMIT cuts through
-- them: `, id` makes the cut the same wherever the rows lie on disk (an imported copy,
-- a table after updates), as the tsvector lane's does. The plan stays the ordered bm25
-- scan under an Incremental Sort, which reads on only through the tied scores at the cut.
--
-- Parameters
--   keyword_memories, keyword_facts int      lane sizes, per variant
--   the filters of memory_filters.sql and fact_filters.sql
    SELECT q.variant, hit.item, hit.id, hit.rank
    FROM q
    CROSS JOIN LATERAL (
        SELECT 'memory'::text AS item, ranked.id, row_number() OVER (ORDER BY ranked.score, ranked.id) AS rank
        FROM (
            SELECT m.id, m.text <@> to_bm25query(q.query, 'memories_text_bm25') AS score
            FROM memories AS m
            WHERE m.tenant_id = %(tenant)s
              {memory_filters}
            ORDER BY score, m.id
            LIMIT %(keyword_memories)s
        ) AS ranked
        UNION ALL
        SELECT 'fact'::text, ranked.id, row_number() OVER (ORDER BY ranked.score, ranked.id)
        FROM (
            SELECT f.id, f.text <@> to_bm25query(q.query, 'facts_text_bm25') AS score
            FROM facts AS f
            WHERE f.tenant_id = %(tenant)s
              {fact_filters}
            ORDER BY score, f.id
            LIMIT %(keyword_facts)s
        ) AS ranked
    ) AS hit

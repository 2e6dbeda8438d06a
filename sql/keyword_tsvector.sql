-- The keyword lane of hybrid_search.sql without pg_textsearch: tsvector match
-- (websearch_to_tsquery over the tsv columns, GIN-indexed), ranked by ts_rank_cd.
-- Spliced into the slot {keyword_lane}; runs over q (variant, query) of that statement.
-- This header is not spliced.
--
-- Parameters
--   keyword_memories, keyword_facts int      lane sizes, per variant
--   the filters of memory_filters.sql and fact_filters.sql
    SELECT q.variant, hit.item, hit.id, hit.rank
    FROM q
    CROSS JOIN LATERAL (
        SELECT 'memory'::text AS item, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id) AS rank
        FROM (
            SELECT m.id, ts_rank_cd(m.tsv, websearch_to_tsquery('english', q.query)) AS score
            FROM memories AS m
            WHERE true
              {memory_filters}
              AND m.tsv @@ websearch_to_tsquery('english', q.query)
            ORDER BY score DESC, m.id
            LIMIT %(keyword_memories)s
        ) AS ranked
        UNION ALL
        SELECT 'fact'::text, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id)
        FROM (
            SELECT f.id, ts_rank_cd(f.tsv, websearch_to_tsquery('english', q.query)) AS score
            FROM facts AS f
            WHERE true
              {fact_filters}
              AND f.tsv @@ websearch_to_tsquery('english', q.query)
            ORDER BY score DESC, f.id
            LIMIT %(keyword_facts)s
        ) AS ranked
    ) AS hit

-- The keyword lane of hybrid_search.sql without pg_textsearch: tsvector match
-- (websearch_to_tsquery over the tsv columns, GIN-indexed), ranked by ts_rank_cd.
-- Spliced into the slot {keyword_lane}; runs over q (variant, query) of that statement.
-- This header is not spliced.
--
-- The matches come from elephant_keyword_memories(query) and elephant_keyword_facts(query)
-- (migration 0009): under row-level security `@@` (not leakproof) may not be an index
-- condition before the tenant policy, so a plain `WHERE m.tsv @@ ...` here would read
-- every row of the tenant. Those SECURITY DEFINER functions run as a role no policy
-- holds back, apply the tenant (elephant.tenant_id) themselves, and so use
-- memories_tsv_gin / facts_tsv_gin. They return each match's id and ts_rank_cd score
-- and the columns the filters read, aliased m and f as a table would be, so the filter
-- fragments apply unchanged; a filter on another column needs that column added to the
-- function (a migration). Rows and ranks are those of the plain query.
--
-- Parameters
--   keyword_memories, keyword_facts int      lane sizes, per variant
--   the filters of memory_filters.sql and fact_filters.sql
    SELECT q.variant, hit.item, hit.id, hit.rank
    FROM q
    CROSS JOIN LATERAL (
        SELECT 'memory'::text AS item, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id) AS rank
        FROM (
            SELECT m.id, m.score
            FROM elephant_keyword_memories(q.query) AS m
            WHERE true
              {memory_filters}
            ORDER BY m.score DESC, m.id
            LIMIT %(keyword_memories)s
        ) AS ranked
        UNION ALL
        SELECT 'fact'::text, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id)
        FROM (
            SELECT f.id, f.score
            FROM elephant_keyword_facts(q.query) AS f
            WHERE true
              {fact_filters}
            ORDER BY f.score DESC, f.id
            LIMIT %(keyword_facts)s
        ) AS ranked
    ) AS hit

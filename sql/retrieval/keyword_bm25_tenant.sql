-- The keyword lane of hybrid_search.sql with pg_textsearch, ranked by the tenant's OWN
-- statistics (issue 40): the default bm25 lane (search.keyword_statistics = tenant).
-- Spliced into the slot {keyword_lane}; runs over q (variant, query) of that statement.
-- This header is not spliced.
--
-- Why: a bm25 index keeps one set of statistics (how many documents hold a word, their
-- average length) for the whole table, over every tenant, so its scores, and the order
-- of a tenant's own results, depended on which words other tenants use.
--
-- How, per query variant and table:
--   pool    the tenant's best keyword_*_pool documents by the shared index (the ordered
--           bm25 scan of keyword_bm25.sql, the filters applied, ties cut by id): the
--           candidates. Every one of them holds a word of the query.
--   score   Okapi BM25 (k1 1.2, b 0.75, pg_textsearch's) from the tenant's rows only:
--           a word's idf = ln(1 + (N - n + 0.5) / (n + 0.5)), N = the tenant's documents
--           (an index-only count), n = the tenant's documents holding the word
--           (elephant_keyword_frequencies, migration 0019: through the GIN index on
--           tsv, which the app role cannot use under row-level security), both counted
--           up to 10,000 so that a big tenant's search stays bounded; tf from the tsv
--           column (to_tsvector('english'), the index's tokenizer); a document's length
--           is its distinct words (length(tsv): counting every position cost ~0.2 ms a
--           candidate), normalised by the pool's average.
-- Every statistic is the tenant's. What may still follow the shared statistics is which
-- documents make the pool, when more of the tenant's documents than the pool holds
-- contain a word of the query (below that the pool is every one of them); the pool's
-- order never does. docs/search.md states this bound and its measurement.
-- The lane's LIMIT then cuts the rescored pool, ties by id.
--
-- Parameters
--   tenant text
--   keyword_memories, keyword_facts int          lane sizes, per variant
--   keyword_memory_pool, keyword_fact_pool int   candidates rescored, per variant (>= size)
--   the filters of memory_filters.sql and fact_filters.sql
    SELECT q.variant, hit.item, hit.id, hit.rank
    FROM q
    CROSS JOIN (
        SELECT (SELECT count(*) FROM (SELECT 1 FROM memories AS m
                                      WHERE m.tenant_id = %(tenant)s
                                        AND %(keyword_memory_pool)s > 0
                                      LIMIT 10000) AS c) AS memories,
               (SELECT count(*) FROM (SELECT 1 FROM facts AS f
                                      WHERE f.tenant_id = %(tenant)s
                                        AND %(keyword_fact_pool)s > 0
                                      LIMIT 10000) AS c) AS facts
    ) AS corpus
    CROSS JOIN LATERAL (
        -- the query's words and how many of the tenant's memories and facts hold each
        -- (migration 0019), once per variant (OFFSET 0: not once per candidate's word)
        SELECT w.terms,
               CASE WHEN %(keyword_memory_pool)s > 0
                    THEN elephant_keyword_frequencies('memories', w.terms) END AS memory_docs,
               CASE WHEN %(keyword_fact_pool)s > 0
                    THEN elephant_keyword_frequencies('facts', w.terms) END AS fact_docs
        FROM (SELECT tsvector_to_array(to_tsvector('english'::regconfig, q.query)) AS terms) AS w
        OFFSET 0
    ) AS qt
    CROSS JOIN LATERAL (
        SELECT 'memory'::text AS item, ranked.id,
               row_number() OVER (ORDER BY ranked.score DESC, ranked.id) AS rank
        FROM (
            SELECT doc.id,
                   coalesce(sum(ln(1 + (corpus.memories - doc.n + 0.5) / (doc.n + 0.5))
                                * doc.tf * 2.2
                                / (doc.tf + 1.2 * (0.25 + 0.75 * doc.dl / doc.avgdl))), 0)
                       AS score
            FROM (
                SELECT pool.id, pool.dl, pool.avgdl, t.tf,
                       greatest(1, qt.memory_docs[array_position(qt.terms, t.lexeme)])::float8
                           AS n
                FROM (
                  SELECT found.*, avg(found.dl) OVER () AS avgdl
                  FROM (
                    SELECT m.id, m.tsv,
                           greatest(1, length(m.tsv))::float8 AS dl
                    FROM memories AS m
                    WHERE m.tenant_id = %(tenant)s
                      {memory_filters}
                    ORDER BY m.text <@> to_bm25query(q.query, 'memories_text_bm25'), m.id
                    LIMIT %(keyword_memory_pool)s
                  ) AS found
                ) AS pool
                LEFT JOIN LATERAL (
                    SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
                    FROM unnest(pool.tsv) AS u
                    WHERE u.lexeme = ANY (qt.terms)
                ) AS t ON true
            ) AS doc
            GROUP BY doc.id
            ORDER BY score DESC, doc.id
            LIMIT %(keyword_memories)s
        ) AS ranked
        UNION ALL
        SELECT 'fact'::text, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id)
        FROM (
            SELECT doc.id,
                   coalesce(sum(ln(1 + (corpus.facts - doc.n + 0.5) / (doc.n + 0.5))
                                * doc.tf * 2.2
                                / (doc.tf + 1.2 * (0.25 + 0.75 * doc.dl / doc.avgdl))), 0)
                       AS score
            FROM (
                SELECT pool.id, pool.dl, pool.avgdl, t.tf,
                       greatest(1, qt.fact_docs[array_position(qt.terms, t.lexeme)])::float8
                           AS n
                FROM (
                  SELECT found.*, avg(found.dl) OVER () AS avgdl
                  FROM (
                    SELECT f.id, f.tsv,
                           greatest(1, length(f.tsv))::float8 AS dl
                    FROM facts AS f
                    WHERE f.tenant_id = %(tenant)s
                      {fact_filters}
                    ORDER BY f.text <@> to_bm25query(q.query, 'facts_text_bm25'), f.id
                    LIMIT %(keyword_fact_pool)s
                  ) AS found
                ) AS pool
                LEFT JOIN LATERAL (
                    SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
                    FROM unnest(pool.tsv) AS u
                    WHERE u.lexeme = ANY (qt.terms)
                ) AS t ON true
            ) AS doc
            GROUP BY doc.id
            ORDER BY score DESC, doc.id
            LIMIT %(keyword_facts)s
        ) AS ranked
    ) AS hit

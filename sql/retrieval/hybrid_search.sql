-- Hybrid search: ONE statement, every lane of every query variant, fused by RRF.
--
-- Every table is read for one tenant, %(tenant)s, named in every statement part as well
-- as enforced by row-level security (so a pooler or Citus can route it by the tenant).
--
-- Lanes (per query variant, all over the current tenant):
--   windows  dense   memories (conversation windows and notes) by cosine distance
--            blended with their best passage's: candidates are the nearest memories
--            (HNSW) and the memories holding the nearest passages (HNSW over
--            passages: turns, parts of long turns and notes); each is scored by
--            (1 - share) * its own distance + share * the distance of its closest
--            passage (late interaction over its turns), share = passage_share for a
--            text the model sees whole, more for a longer one (its own vector sees
--            only the first max_length tokens)
--   facts    dense   facts by cosine distance, HNSW
--   keyword  lexical memories and facts by BM25 (pg_textsearch) or tsvector rank;
--            the lane is spliced in from keyword_bm25.sql or keyword_tsvector.sql
--   graph    facts linked (fact_entities) to the 1-hop neighbours of the entities
--            the question names (not to those entities themselves: the facts lane
--            has them), nearest first, <= 3 per neighbour, first variant only;
--            the caller looks the entities up in the graph first
--   preferences  standing preferences and instructions (facts of type preference)
--            closest to the question, above a similarity floor: what a person asked
--            to hold from now on reaches every request on its topic
--   timeline the subject's facts, one per session, in time order, for a question
--            that asks how something went over time (timeline_lane.sql)
--   neighbours  (expansion) the windows beside the seeds' windows in their session
--            (neighbour_lane.sql)
-- Each dense lane has two ways, of which a one-time filter on %(exact)s runs one:
--   exact    (a tenant below search.tenant_index_rows) every row of the tenant, read
--            through its tenant_id index and sorted by distance: exact, and cheaper
--            than walking a graph shared with bigger tenants. `+ 0` keeps the HNSW
--            indexes out of it (they serve only ORDER BY <vector> <=> <vector>).
--   index    an HNSW walk: over the tenant's own partial indexes when the statement
--            names the tenant as a literal (app/db/tenant_indexes.py: the code
--            writes it in for a tenant that has them), else over the shared graphs
--            with pgvector's iterative scan.
-- A new lane is one Lane entry in LANES (app/services/retrieval/lanes.py), one CTE (in a
-- file of its own, spliced by a slot line) and one line of a union: `lanes` for a lane
-- of the first stage, `all_lanes` for an expansion lane (it starts from `seeds`, the
-- first stage's best hits). Weights and ranks travel as arrays in registry order.
-- Fusion: score = sum over lanes and variants of
--     lane_weight * variant_weight / (rrf_k + rank)
-- (x assistant_fact_weight for a fact an assistant said), plus an optional recency
-- prior, a date prior when the question names a date, and an optional activation
-- prior (what is important and in use decays slower). Each hit reports its best
-- rank in every lane, and its activation.
-- At equal scores (rank r in two lanes) a window or note, whose turns hold the
-- context, comes before a fact extracted from them.
--
-- Slots: a line holding only {name} is filled, when the code loads this file, with
-- sql/retrieval/<name>.sql (app/db/resources.py, splice): {memory_filters} and {fact_filters}
-- hold the filters every lane applies (memories as m, facts as f), written once;
-- {keyword_lane} is keyword_bm25.sql or keyword_tsvector.sql; {window_lane} is the
-- windows lane's CTEs (window_lane.sql, which benchmarks/scale.py also runs on its
-- own). To run this by hand, paste those files in (their header comments are not
-- part of the splice).
--
-- Parameters
--   tenant text                              the tenant (also elephant.tenant_id)
--   exact boolean                            the dense lanes scan exactly (see above)
--   vectors vector[] (sent binary), texts text[]   one entry per query variant
--   windows, facts int                       dense lane sizes (0 switches a lane off)
--   passage_share float8                     0-1, a window's score from its best passage
--   passage_candidates int                   nearest passages per variant whose windows
--                                            join the windows lane's candidates (<= windows;
--                                            0: none, passage_share still scores the rest)
--   seen_chars int                           ~ characters the embedding model sees of a text
--   keyword_memories, keyword_facts int      keyword lane sizes, memories and facts
--   keyword_memory_pool, keyword_fact_pool int   candidates the bm25 lane rescores with the
--                                            tenant's own statistics (keyword_bm25_tenant.sql)
--   graph int                                graph lane size
--   preferences int                          preference lane size (0: off)
--   preference_min_similarity float8         cosine below which a preference is not shown
--   graph_named, graph_neighbours text[]     entity keys (named, 1-hop neighbours)
--   rrf_k int, result_limit int
--   variant_weights float8[]                 one per variant (the question itself: 1)
--   lane_names text[], lane_weights float8[] the lanes in registry order and their RRF
--                                            weights (search.<lane>_weight)
--   expansion_seeds int                      first-stage hits the expansion lanes start from
--   entity_expansion_memories, entity_expansion_facts, entity_expansion_per_entity int,
--   entity_match_memories, entity_match_facts int, entity_match_keys text[],
--   hub_mentions int                         the entity lanes (entity_expansion_lane.sql,
--                                            entity_match_lane.sql)
--   neighbours, neighbour_turns int          the neighbour lane (neighbour_lane.sql)
--   timeline int, timeline_subjects text[]   the timeline lane (timeline_lane.sql)
--   the filters, NULL = off (documented in memory_filters.sql and fact_filters.sql):
--     sources text[] | NULL                  only these sources
--     memory_kinds text[] | NULL             window / note (facts: facts lane size 0)
--     created_after, created_before timestamptz | NULL
--     event_after, event_before timestamptz | NULL   memories.event_at / facts.valid_from
--     as_of timestamptz | NULL               only facts valid at that instant
--     include_expired boolean                also superseded / expired facts, and
--                                            superseded store items
--     item_namespace text | NULL             only store items under it ('' any item)
--     item_value jsonb | NULL                only store items whose value contains it
--   date_after, date_before timestamptz | NULL    the span the question names (with slack):
--                                            events in it get date_weight / (rrf_k + 1)
--   date_weight float8
--   assistant_fact_weight float8             a fact an assistant said: its RRF score x this
--   fact_support float8                      a window gains this x its best found fact's score
--   recency_weight float, half_life_days float
--                                            prior = weight * 0.5^(age / half-life), the
--                                            exponent held to 0-200 half-lives: a future
--                                            date counts as now, and an old one (a memory
--                                            from 1900) cannot underflow float8 (an error)
--   activation_weight float8                 activation prior: a hit gains weight x its
--                                            activation (0-1) / (rrf_k + 1) (0: off)
--   activation_half_life_days, activation_importance_factor, activation_access_boost float8
--                                            the decay curve of elephant_activation
--                                            (sql/objects/20_lifecycle.sql): importance,
--                                            age since last stored / seen / used, uses
-- The caller sets hnsw.ef_search >= the lane sizes (and iterative scans) first.
WITH q AS (
    SELECT v.embedding, v.query, v.variant
    FROM unnest(%(vectors)b::vector[], %(texts)s::text[])
         WITH ORDINALITY AS v(embedding, query, variant)
),
{window_lane}
,  -- window_lane.sql ends without a comma: it may also end a WITH list
fact_lane AS (
    SELECT q.variant, hit.id, hit.rank
    FROM q
    CROSS JOIN LATERAL (
        SELECT ranked.id, row_number() OVER (ORDER BY ranked.distance, ranked.id) AS rank
        FROM (
            (SELECT f.id, f.embedding <=> q.embedding AS distance  -- index
             FROM facts AS f
             WHERE NOT %(exact)s
               AND f.tenant_id = %(tenant)s
               AND f.embedding IS NOT NULL
               {fact_filters}
             ORDER BY f.embedding <=> q.embedding
             LIMIT %(facts)s)
            UNION ALL
            (SELECT f.id, f.embedding <=> q.embedding AS distance  -- exact
             FROM facts AS f
             WHERE %(exact)s
               AND f.tenant_id = %(tenant)s
               AND f.embedding IS NOT NULL
               {fact_filters}
             ORDER BY (f.embedding <=> q.embedding) + 0
             LIMIT %(facts)s)
        ) AS ranked
    ) AS hit
),
keyword_lane AS (
{keyword_lane}
),
graph_facts AS MATERIALIZED (
    -- Materialized: the linked facts are found through the entity index, then
    -- ranked; never an HNSW walk filtered down to them. Facts about the named
    -- entities themselves are left to the other lanes (counting them here again
    -- only re-ranks what the facts lane already found).
    SELECT fe.entity_key, f.id, f.embedding
    FROM fact_entities AS fe
    JOIN facts AS f ON f.id = fe.fact_id AND f.tenant_id = %(tenant)s
    WHERE %(graph)s > 0
      AND fe.tenant_id = %(tenant)s
      AND fe.entity_key = ANY (%(graph_neighbours)s::text[])
      AND NOT EXISTS (SELECT 1 FROM fact_entities AS named
                      WHERE named.tenant_id = %(tenant)s
                        AND named.fact_id = f.id
                        AND named.entity_key = ANY (%(graph_named)s::text[]))
      AND f.embedding IS NOT NULL
      {fact_filters}
    LIMIT 5000
),
graph_lane AS (
    -- Nearest first, at most three facts per neighbour, so one busy neighbour
    -- cannot fill the lane.
    SELECT 1::bigint AS variant, per_fact.id,
           row_number() OVER (ORDER BY per_fact.distance, per_fact.id) AS rank
    FROM (
        SELECT per_entity.id, min(per_entity.distance) AS distance
        FROM (
            SELECT d.id, d.distance,
                   row_number() OVER (PARTITION BY d.entity_key ORDER BY d.distance, d.id)
                       AS entity_rank
            FROM (
                SELECT g.entity_key, g.id, g.embedding <=> q.embedding AS distance
                FROM graph_facts AS g
                CROSS JOIN q
                WHERE q.variant = 1
            ) AS d
        ) AS per_entity
        WHERE per_entity.entity_rank <= 3
        GROUP BY per_entity.id
    ) AS per_fact
    ORDER BY per_fact.distance, per_fact.id
    LIMIT %(graph)s
),
preference_lane AS (
    -- Standing preferences and instructions (fact_type preference) nearest the
    -- question, if at all close; first variant only. Exact: the tenant's preferences
    -- (their partial tenant_id index), ranked exactly. Index: the nearest through the
    -- HNSW graph of preferences (facts_preferences_hnsw), a big tenant having many.
    SELECT 1::bigint AS variant, near.id,
           row_number() OVER (ORDER BY near.distance, near.id) AS rank
    FROM q
    CROSS JOIN LATERAL (
        (SELECT f.id, f.embedding <=> q.embedding AS distance  -- index
         FROM facts AS f
         WHERE NOT %(exact)s
           AND %(preferences)s > 0
           AND f.tenant_id = %(tenant)s
           AND f.fact_type = 'preference'
           AND f.embedding IS NOT NULL
           {fact_filters}
         ORDER BY f.embedding <=> q.embedding
         LIMIT %(preferences)s)
        UNION ALL
        (SELECT f.id, f.embedding <=> q.embedding AS distance  -- exact
         FROM facts AS f
         WHERE %(exact)s
           AND %(preferences)s > 0
           AND f.tenant_id = %(tenant)s
           AND f.fact_type = 'preference'
           AND f.embedding IS NOT NULL
           {fact_filters}
         ORDER BY (f.embedding <=> q.embedding) + 0
         LIMIT %(preferences)s)
    ) AS near
    WHERE q.variant = 1
      AND near.distance <= 1 - %(preference_min_similarity)s::float8
    ORDER BY near.distance, near.id
    LIMIT %(preferences)s
),
{entity_match_lane}
,  -- entity_match_lane.sql ends without a comma
{timeline_lane}
,  -- timeline_lane.sql ends without a comma
lanes AS (
    -- The first stage: one line per lane (item, id, variant, lane, rank), the lane named
    -- as in the registry (app/services/retrieval/lanes.py LANES; a unit test ties them).
    SELECT 'memory'::text AS item, id, variant, 'windows'::text AS lane, rank FROM window_lane
    UNION ALL SELECT 'fact', id, variant, 'facts', rank FROM fact_lane
    UNION ALL SELECT item, id, variant, 'keyword', rank FROM keyword_lane
    UNION ALL SELECT 'fact', id, variant, 'graph', rank FROM graph_lane
    UNION ALL SELECT 'fact', id, variant, 'preferences', rank FROM preference_lane
    UNION ALL SELECT item, id, variant, 'entity_match', rank FROM entity_match_lane
    UNION ALL SELECT item, id, variant, 'timeline', rank FROM timeline_lane
),
seeds AS MATERIALIZED (
    -- The first stage's best items (expansion_seeds of them), fused as below: where the
    -- expansion lanes start. Not computed while no expansion lane reads it.
    SELECT l.item, l.id,
           sum(w.weight * (%(variant_weights)s::float8[])[l.variant] / (%(rrf_k)s + l.rank))
               AS rrf
    FROM lanes AS l
    JOIN unnest(%(lane_names)s::text[], %(lane_weights)s::float8[]) AS w(lane, weight)
      ON w.lane = l.lane
    GROUP BY l.item, l.id
    ORDER BY rrf DESC, l.item = 'fact', l.id
    LIMIT %(expansion_seeds)s
),
{entity_expansion_lane}
,  -- entity_expansion_lane.sql ends without a comma
{neighbour_lane}
,  -- neighbour_lane.sql ends without a comma
all_lanes AS (
    -- The first stage and the expansion lanes (which read seeds), one line each.
    SELECT item, id, variant, lane, rank FROM lanes
    UNION ALL SELECT item, id, variant, 'entity_expansion', rank FROM entity_expansion_lane
    UNION ALL SELECT item, id, variant, 'neighbours', rank FROM neighbour_lane
),
lane_hits AS (
    -- Each hit's share of the fusion: its lane's weight (lane_weights, in the order of
    -- lane_names) x its variant's weight / (rrf_k + rank); best_rank: the hit's best rank
    -- in that lane over the variants.
    SELECT l.item, l.id, l.lane, l.variant,
           min(l.rank) OVER (PARTITION BY l.item, l.id, l.lane) AS best_rank,
           w.weight * (%(variant_weights)s::float8[])[l.variant]
               / (%(rrf_k)s + l.rank)                          AS share
    FROM all_lanes AS l
    JOIN unnest(%(lane_names)s::text[], %(lane_weights)s::float8[]) AS w(lane, weight)
      ON w.lane = l.lane
),
lane_scores AS (
    SELECT item,
           id,
           sum(share)                                 AS rrf,
           jsonb_object_agg(lane, best_rank)          AS ranks,  -- {lane: best rank}
           array_agg(DISTINCT variant)                AS variants
    FROM lane_hits
    GROUP BY item, id
),
fact_support AS (
    -- A fact the lanes found speaks for the window holding its turn: that window gets
    -- fact_support x the fact's score (its best fact's), and comes in if no lane had
    -- it. So a window and the facts made from it agree instead of competing.
    SELECT 'memory'::text AS item, m.id, max(s.rrf) AS support
    FROM lane_scores AS s
    JOIN facts AS f ON s.item = 'fact' AND f.id = s.id AND f.tenant_id = %(tenant)s
    JOIN memories AS m ON m.id = f.memory_id AND m.tenant_id = %(tenant)s
    WHERE %(fact_support)s::float8 > 0
      AND %(windows)s + %(keyword_memories)s > 0
      AND m.embedding IS NOT NULL
      {memory_filters}
    GROUP BY m.id
),
fused AS MATERIALIZED (
    -- Materialized: joined to memories and facts by id afterwards, never by hashing whole
    -- tables (a plan the full join otherwise invites: 110 ms instead of 13 at 100k).
    SELECT coalesce(s.item, support.item) AS item,
           coalesce(s.id, support.id) AS id,
           coalesce(s.rrf, 0) + %(fact_support)s::float8 * coalesce(support.support, 0) AS rrf,
           coalesce(s.ranks, '{}'::jsonb) AS ranks,
           coalesce(s.variants, ARRAY[1::bigint]) AS variants
    FROM lane_scores AS s
    FULL JOIN fact_support AS support ON support.item = s.item AND support.id = s.id
),
activated AS (
    -- Only what the score needs; text and the other columns are joined after the LIMIT,
    -- for the rows returned (the pool is ~3-10x larger than the answer).
    SELECT fused.*, m.event_at, m.created_at AS memory_created_at, f.valid_from,
           f.created_at AS fact_created_at, f.metadata ->> 'said_by' AS said_by,
           elephant_activation(coalesce(m.importance, f.importance),
                               greatest(coalesce(m.created_at, f.created_at), m.last_seen_at,
                                        used.last_accessed_at),
                               used.access_count, now(),
                               %(activation_half_life_days)s::float8,
                               %(activation_importance_factor)s::float8,
                               %(activation_access_boost)s::float8) AS activation
    FROM fused
    LEFT JOIN memories AS m
           ON fused.item = 'memory' AND m.id = fused.id AND m.tenant_id = %(tenant)s
    LEFT JOIN facts AS f
           ON fused.item = 'fact' AND f.id = fused.id AND f.tenant_id = %(tenant)s
    -- how often it was used lives aside (access_stats): a search never rewrites the
    -- rows it returns. LATERAL ... LIMIT 1: one primary-key probe per fused row; a
    -- plain join was planned as a scan of the tenant's whole access_stats, materialized
    -- and filtered per row (22 of 34 ms at 10k memories)
    LEFT JOIN LATERAL (
        SELECT a.access_count, a.last_accessed_at
        FROM access_stats AS a
        WHERE a.tenant_id = %(tenant)s AND a.item_id = fused.id
        LIMIT 1
    ) AS used ON true
),
scored AS (
    SELECT a.*,
           CASE WHEN %(recency_weight)s::float8 > 0 THEN
                %(recency_weight)s::float8 * power(0.5, least(200, greatest(0,
                    extract(epoch FROM now() - coalesce(a.event_at, a.valid_from,
                                                        a.memory_created_at, a.fact_created_at))
                    / 86400.0 / %(half_life_days)s::float8)))
                ELSE 0 END                                            AS prior,
           -- the question names a date: what happened then is lifted by up to a
           -- rank-1 hit of one lane (date_weight 1)
           CASE WHEN coalesce(a.event_at, a.valid_from) >= %(date_after)s::timestamptz
                 AND coalesce(a.event_at, a.valid_from) < %(date_before)s::timestamptz
                THEN %(date_weight)s::float8 / (%(rrf_k)s + 1)
                ELSE 0 END                                            AS date_prior,
           -- what an assistant said is lower-trust evidence than what a person said
           CASE WHEN a.said_by = 'assistant'
                THEN %(assistant_fact_weight)s::float8
                ELSE 1 END                                            AS trust,
           -- what is important and in use, and so decays slower, is lifted by up to a
           -- rank-1 hit of one lane (activation_weight 1, activation 1); rounded to 0.01,
           -- so it never breaks ties by minutes of age (a window and the facts extracted
           -- from it later): a prior, not a tie-breaker
           %(activation_weight)s::float8 * round(a.activation::numeric, 2)::float8
               / (%(rrf_k)s + 1)                                      AS activation_prior
    FROM activated AS a
),
top AS MATERIALIZED (
    SELECT item, id, rrf * trust + prior + date_prior + activation_prior AS score,
           rrf * trust AS rrf, prior + date_prior + activation_prior AS prior,
           ranks, variants, activation
    FROM scored
    ORDER BY score DESC, item = 'fact', id
    LIMIT %(result_limit)s
)
SELECT coalesce(m.kind, 'fact')                       AS kind,
       top.id,
       coalesce(m.text, f.text)                       AS text,
       coalesce(m.source, f.source)                   AS source,
       coalesce(m.created_at, f.created_at)           AS created_at,
       coalesce(m.event_at, f.valid_from)             AS event_at,
       f.valid_to,
       f.subject,
       f.status                                       AS fact_status,
       f.memory_id,
       coalesce(m.source_turn_ids, f.source_turn_ids) AS source_turn_ids,
       coalesce(m.importance, f.importance)           AS importance,
       top.score, top.rrf, top.prior,
       -- each lane's best rank, in the order of lane_names (NULL: not found there)
       ARRAY(SELECT (top.ranks ->> n.lane)::bigint
             FROM unnest(%(lane_names)s::text[]) WITH ORDINALITY AS n(lane, place)
             ORDER BY n.place)                        AS ranks,
       top.variants, top.activation
FROM top
LEFT JOIN memories AS m ON top.item = 'memory' AND m.id = top.id AND m.tenant_id = %(tenant)s
LEFT JOIN facts AS f ON top.item = 'fact' AND f.id = top.id AND f.tenant_id = %(tenant)s
ORDER BY top.score DESC, top.item = 'fact', top.id

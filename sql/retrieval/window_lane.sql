-- The windows lane of hybrid_search.sql: a list of four CTEs (no WITH, no trailing
-- comma) that ends in window_lane (variant, id, rank), the nearest windows and notes of
-- every query variant. hybrid_search.sql splices it in where a line holds only
-- {window_lane} (see app/db/resources.py); benchmarks/scale.py splices the same text
-- into its separate windows-lane query, so both run one lane. This header is not
-- spliced.
--
-- It reads q (embedding vector, variant bigint: one row per query variant) from the
-- statement it is spliced into, and holds the {memory_filters} slot (memories as m).
--   near_passages      the passage_candidates passages nearest each variant (HNSW over
--                      passages)
--   window_candidates  the nearest memories (HNSW), the windows holding a near turn
--                      and the long notes a near passage is part of, each with its
--                      own distance and what window_scores reads of it (its length
--                      and turn range), so that no memory row is fetched twice
--   window_scores      each candidate's distance: its own, blended with its best
--                      passage's (late interaction over its turns / parts)
--   window_lane        the candidates ranked per variant, at most windows of them
--
-- Parameters (documented in hybrid_search.sql): tenant text, exact boolean (the dense
-- scans exact or through an HNSW index), windows int, passage_candidates int
-- (<= windows; 0: no passage brings in a window, the blend still scores the others),
-- passage_share float8, seen_chars int, and the memory filters' (memory_filters.sql).
near_passages AS (
    -- The passages (turns, parts of long turns and notes) nearest each variant: they
    -- bring in windows whose whole-window vector missed what one of their turns says.
    SELECT q.variant, hit.turn_id, hit.memory_id
    FROM q
    CROSS JOIN LATERAL (
        (SELECT p.turn_id, p.memory_id  -- index
         FROM passages AS p
         WHERE NOT %(exact)s
           AND %(passage_share)s::float8 > 0
           AND p.tenant_id = %(tenant)s
         ORDER BY p.embedding <=> q.embedding
         LIMIT %(passage_candidates)s)
        UNION ALL
        (SELECT p.turn_id, p.memory_id  -- exact
         FROM passages AS p
         WHERE %(exact)s
           AND %(passage_share)s::float8 > 0
           AND p.tenant_id = %(tenant)s
         ORDER BY (p.embedding <=> q.embedding) + 0
         LIMIT %(passage_candidates)s)
    ) AS hit
),
window_candidates AS (
    -- (variant, id) decides the other columns: UNION removes the same duplicates
    SELECT q.variant, hit.id, hit.embedding <=> q.embedding AS whole_distance,
           hit.chars, hit.conversation_id, hit.turn_start, hit.turn_end
    FROM q
    CROSS JOIN LATERAL (
        (SELECT m.id, m.embedding, length(m.text) AS chars, m.conversation_id,  -- index
                m.turn_start, m.turn_end
         FROM memories AS m
         WHERE NOT %(exact)s
           AND m.tenant_id = %(tenant)s
           AND m.embedding IS NOT NULL
           {memory_filters}
         ORDER BY m.embedding <=> q.embedding
         LIMIT %(windows)s)
        UNION ALL
        SELECT m.id, m.embedding, length(m.text) AS chars, m.conversation_id,  -- exact:
               m.turn_start, m.turn_end          -- the nearest ids first, then their rows,
        FROM (SELECT m.id                        -- so no text is read (or detoasted) for
              FROM memories AS m                 -- the rows that are not returned
              WHERE %(exact)s
                AND m.tenant_id = %(tenant)s
                AND m.embedding IS NOT NULL
                {memory_filters}
              ORDER BY (m.embedding <=> q.embedding) + 0
              LIMIT %(windows)s) AS near
        JOIN memories AS m ON m.id = near.id AND m.tenant_id = %(tenant)s
    ) AS hit
    UNION
    SELECT near.variant, m.id, m.embedding <=> q.embedding, length(m.text),  -- the windows
           m.conversation_id, m.turn_start, m.turn_end                  -- holding a near turn
    FROM near_passages AS near
    JOIN q ON q.variant = near.variant
    JOIN turns AS t ON t.id = near.turn_id AND t.tenant_id = %(tenant)s
    JOIN memories AS m ON m.tenant_id = %(tenant)s
                      AND m.conversation_id = t.conversation_id
                      AND m.turn_start BETWEEN t.seq - 100 AND t.seq  -- window_size <= 100
                      AND m.turn_end >= t.seq
    WHERE m.embedding IS NOT NULL
      {memory_filters}
    UNION
    SELECT near.variant, m.id, m.embedding <=> q.embedding, length(m.text),  -- the long note
           m.conversation_id, m.turn_start, m.turn_end         -- a near passage is part of
    FROM near_passages AS near
    JOIN q ON q.variant = near.variant
    JOIN memories AS m ON m.id = near.memory_id AND m.tenant_id = %(tenant)s
    WHERE m.embedding IS NOT NULL
      {memory_filters}
),
window_scores AS (
    -- distance = (1 - share) * whole-window distance + share * best passage distance,
    -- where the whole-window vector counts only for the part of the text the model
    -- saw (seen_chars of length(text)): share = 1 - (1 - passage_share) * seen part.
    -- A window without passages: its whole-window distance.
    SELECT c.variant, c.id,
           (1 - share.value) * c.whole_distance
           + share.value * coalesce(least(turn_best.distance, note_best.distance), c.whole_distance)
               AS distance
    FROM window_candidates AS c
    JOIN q ON q.variant = c.variant
    CROSS JOIN LATERAL (
        SELECT CASE WHEN %(passage_share)s::float8 > 0 THEN
                    1 - (1 - %(passage_share)s::float8)
                        * least(1.0, %(seen_chars)s::float8 / greatest(c.chars, 1))
                    ELSE 0 END AS value
    ) AS share
    LEFT JOIN LATERAL (
        SELECT min(p.embedding <=> q.embedding) AS distance
        FROM turns AS t
        JOIN passages AS p ON p.turn_id = t.id AND p.tenant_id = %(tenant)s
        WHERE %(passage_share)s::float8 > 0
          AND t.tenant_id = %(tenant)s
          AND t.conversation_id = c.conversation_id
          AND t.seq BETWEEN c.turn_start AND c.turn_end
    ) AS turn_best ON true
    LEFT JOIN LATERAL (
        SELECT min(p.embedding <=> q.embedding) AS distance
        FROM passages AS p
        WHERE %(passage_share)s::float8 > 0 AND p.tenant_id = %(tenant)s AND p.memory_id = c.id
    ) AS note_best ON true
),
window_lane AS (
    SELECT ranked.variant, ranked.id, ranked.rank
    FROM (
        SELECT s.variant, s.id,
               row_number() OVER (PARTITION BY s.variant ORDER BY s.distance, s.id) AS rank
        FROM window_scores AS s
    ) AS ranked
    WHERE ranked.rank <= %(windows)s
)

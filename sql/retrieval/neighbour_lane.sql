-- The neighbour lane of hybrid_search.sql: a list of CTEs (no WITH, no trailing comma) that
-- ends in neighbour_lane (item, id, variant, rank): the conversation windows beside the
-- first hits' (seeds') windows in their session. An answer often spans turns next to each
-- other of which only one sounds like the question ("What did you name him?" / "Biscuit");
-- the text lanes find the one, this lane brings in the window of its neighbours.
-- hybrid_search.sql splices it in where a line holds only {neighbour_lane} (see
-- app/db/resources.py). This header is not spliced.
--
-- It reads seeds (item 'memory' | 'fact', id, rrf) from the statement and holds the
-- {memory_filters} slot (memories as m).
--   neighbour_seeds  each seed's window: a window seed itself, a fact seed the window it
--                    was extracted from (facts.memory_id); notes have no neighbours
--   neighbour_lane   the windows of the same conversation whose first turn lies at most
--                    neighbour_turns turns from the seed window's (on either side; with
--                    the default windows of 5 turns every 2, 2 turns: the window before
--                    and the one after, each bringing two turns the seed lacks), not seeds
--                    themselves; ranked by their seed's rank, then by the shift
--
-- Parameters: tenant text, neighbours int (the lane's size; 0: off, nothing runs, not even
-- seeds), neighbour_turns int, and the memory filters'. Served by memories_conversation.
neighbour_seeds AS MATERIALIZED (
    SELECT w.id, w.conversation_id, w.turn_start,
           row_number() OVER (ORDER BY s.rrf DESC, s.item = 'fact', s.id) AS seed_rank
    FROM seeds AS s
    LEFT JOIN facts AS sf ON s.item = 'fact' AND sf.id = s.id AND sf.tenant_id = %(tenant)s
    JOIN memories AS w
      ON w.tenant_id = %(tenant)s
     AND w.id = CASE s.item WHEN 'memory' THEN s.id ELSE sf.memory_id END
    WHERE %(neighbours)s > 0
      AND w.kind = 'window'
      AND w.conversation_id IS NOT NULL
      AND w.turn_start IS NOT NULL
),
neighbour_lane AS (
    SELECT 'memory'::text AS item, near.id, 1::bigint AS variant,
           row_number() OVER (ORDER BY near.seed_rank, near.shift, near.id) AS rank
    FROM (
        SELECT DISTINCT ON (m.id) m.id, n.seed_rank, abs(m.turn_start - n.turn_start) AS shift
        FROM neighbour_seeds AS n
        JOIN memories AS m
          ON m.tenant_id = %(tenant)s
         AND m.conversation_id = n.conversation_id
         AND m.kind = 'window'
         AND m.id <> n.id
         AND m.turn_start BETWEEN n.turn_start - %(neighbour_turns)s
                              AND n.turn_start + %(neighbour_turns)s
        WHERE m.embedding IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM seeds AS s WHERE s.item = 'memory' AND s.id = m.id)
          {memory_filters}
        ORDER BY m.id, n.seed_rank, abs(m.turn_start - n.turn_start)
    ) AS near
    ORDER BY near.seed_rank, near.shift, near.id
    LIMIT %(neighbours)s
)

-- The timeline lane of hybrid_search.sql: a list of CTEs (no WITH, no trailing comma) that
-- ends in timeline_lane (item, id, variant, rank): for a question that asks how something
-- went over time ("in what order", "how did X change", "since March"; the code decides,
-- app/services/retrieval/timeline.py), the facts about the subject the question names,
-- each session once (its fact nearest the question), ranked in time order. The text lanes
-- find the sessions that sound most like the question, often one; a timeline needs one
-- fact from each. hybrid_search.sql splices it in where a line holds only
-- {timeline_lane} (see app/db/resources.py). This header is not spliced.
--
-- It reads q (embedding, variant) from the statement and holds the {fact_filters} slot
-- (facts as f).
--   timeline_facts  per session (conversation; a fact of a note is a session of its own),
--                   the subject's fact nearest the question (first variant): facts linked
--                   'about' an entity key of timeline_subjects (fact_entities)
--   timeline_lane   the timeline sessions nearest the question, at most timeline of them,
--                   ranked by when their fact happened (valid_from), then by distance
--
-- Parameters: tenant text, timeline int (the lane's size; 0: off, nothing runs),
-- timeline_subjects text[] (entity keys the question may name), and the fact filters'.
-- Served by fact_entities_entity (tenant_id, entity_key).
timeline_facts AS MATERIALIZED (
    SELECT DISTINCT ON (coalesce(f.conversation_id, f.id))
           f.id, f.valid_from, f.embedding <=> q.embedding AS distance
    FROM fact_entities AS fe
    JOIN facts AS f ON f.id = fe.fact_id AND f.tenant_id = %(tenant)s
    CROSS JOIN q
    WHERE %(timeline)s > 0
      AND q.variant = 1
      AND fe.tenant_id = %(tenant)s
      AND fe.entity_key = ANY (%(timeline_subjects)s::text[])
      AND fe.link = 'about'
      AND f.embedding IS NOT NULL
      {fact_filters}
    ORDER BY coalesce(f.conversation_id, f.id), f.embedding <=> q.embedding, f.id
),
timeline_lane AS (
    SELECT 'fact'::text AS item, chosen.id, 1::bigint AS variant,
           row_number() OVER (ORDER BY chosen.valid_from NULLS LAST, chosen.distance,
                                       chosen.id) AS rank
    FROM (
        SELECT t.id, t.valid_from, t.distance
        FROM timeline_facts AS t
        ORDER BY t.distance, t.id
        LIMIT %(timeline)s
    ) AS chosen
)

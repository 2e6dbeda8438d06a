-- The entity expansion lane of hybrid_search.sql: a list of CTEs (no WITH, no trailing
-- comma) that ends in entity_expansion_lane (item, id, variant, rank): memories and facts
-- that name an entity one of the first hits (seeds) names, skipping hub entities, nearest
-- the question first. A text lane ranks what sounds like the question; this lane brings
-- in what shares a name with what the question found (the evidence a multi-hop question
-- needs from another session). hybrid_search.sql splices it in where a line holds only
-- {entity_expansion_lane} (see app/db/resources.py). This header is not spliced.
--
-- It reads q (embedding, variant) and seeds (item 'memory' | 'fact', id) from the
-- statement, and holds the {memory_filters} and {fact_filters} slots.
--   expansion_entities  the entities the seeds name: a memory's links (memory_entities)
--                       and its facts', a fact's (fact_entities)
--   expansion_keys      those that are not hubs: named by at most hub_mentions memories
--                       and facts (entity_mentions)
--   expansion_rows      the memories and facts naming a kept entity (a memory also
--                       through a fact made from it), not seeds
--   entity_expansion_lane  memories ranked among memories, facts among facts, by
--                       distance to the question (first variant), at most
--                       entity_expansion_per_entity of them per entity
--
-- Parameters: tenant text, entity_expansion_memories and entity_expansion_facts int (how
-- many of each; both 0: off, nothing runs, not even seeds), hub_mentions int,
-- entity_expansion_per_entity int, and the filters'.
expansion_entities AS MATERIALIZED (
    SELECT DISTINCT links.entity_key
    FROM seeds AS s
    CROSS JOIN LATERAL (
        SELECT me.entity_key
        FROM memory_entities AS me
        WHERE s.item = 'memory' AND me.tenant_id = %(tenant)s AND me.memory_id = s.id
        UNION ALL
        SELECT fe.entity_key
        FROM fact_entities AS fe
        WHERE s.item = 'fact' AND fe.tenant_id = %(tenant)s AND fe.fact_id = s.id
        UNION ALL
        SELECT fe.entity_key
        FROM facts AS f
        JOIN fact_entities AS fe ON fe.tenant_id = %(tenant)s AND fe.fact_id = f.id
        WHERE s.item = 'memory' AND f.tenant_id = %(tenant)s AND f.memory_id = s.id
    ) AS links
    WHERE %(entity_expansion_memories)s::int + %(entity_expansion_facts)s::int > 0
),
expansion_keys AS MATERIALIZED (
    SELECT e.entity_key
    FROM expansion_entities AS e
    WHERE NOT EXISTS (SELECT 1 FROM entity_mentions AS hub
                      WHERE hub.tenant_id = %(tenant)s
                        AND hub.entity_key = e.entity_key
                        AND hub.mentions > %(hub_mentions)s)
),
expansion_rows AS MATERIALIZED (
    SELECT 'memory'::text AS item, k.entity_key, m.id, m.embedding
    FROM expansion_keys AS k
    CROSS JOIN LATERAL (
        {entity_memories}
    ) AS linked
    JOIN memories AS m ON m.id = linked.memory_id AND m.tenant_id = %(tenant)s
    WHERE %(entity_expansion_memories)s > 0
      AND m.embedding IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM seeds AS s WHERE s.item = 'memory' AND s.id = m.id)
      {memory_filters}
    UNION ALL
    SELECT 'fact'::text, k.entity_key, f.id, f.embedding
    FROM expansion_keys AS k
    JOIN fact_entities AS fe ON fe.tenant_id = %(tenant)s AND fe.entity_key = k.entity_key
    JOIN facts AS f ON f.id = fe.fact_id AND f.tenant_id = %(tenant)s
    WHERE %(entity_expansion_facts)s > 0
      AND f.embedding IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM seeds AS s WHERE s.item = 'fact' AND s.id = f.id)
      {fact_filters}
),
entity_expansion_lane AS (
    SELECT ranked.item, ranked.id, 1::bigint AS variant, ranked.rank
    FROM (
        SELECT per_row.item, per_row.id,
               row_number() OVER (PARTITION BY per_row.item
                                  ORDER BY per_row.distance, per_row.id) AS rank
        FROM (
            SELECT per_entity.item, per_entity.id, min(per_entity.distance) AS distance
            FROM (
                SELECT d.item, d.id, d.distance,
                       row_number() OVER (PARTITION BY d.item, d.entity_key
                                          ORDER BY d.distance, d.id) AS entity_rank
                FROM (
                    SELECT r.item, r.entity_key, r.id, r.embedding <=> q.embedding AS distance
                    FROM expansion_rows AS r
                    CROSS JOIN q
                    WHERE q.variant = 1
                ) AS d
            ) AS per_entity
            WHERE per_entity.entity_rank <= %(entity_expansion_per_entity)s
            GROUP BY per_entity.item, per_entity.id
        ) AS per_row
    ) AS ranked
    WHERE ranked.rank <= CASE ranked.item WHEN 'memory' THEN %(entity_expansion_memories)s
                                          ELSE %(entity_expansion_facts)s END
)

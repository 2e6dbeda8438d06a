-- The entity match lane of hybrid_search.sql: a list of CTEs (no WITH, no trailing comma)
-- that ends in entity_match_lane (item, id, variant, rank): the memories and facts linked
-- to an entity the question names, nearest the question first. The names come from the
-- same offline grammar that links memories and facts at ingest; only those the tenant
-- holds count, and hubs (named by more than hub_mentions rows: the speakers of a chat)
-- are skipped, as they would only repeat the text lanes. hybrid_search.sql splices it in
-- where a line holds only {entity_match_lane} (see app/db/resources.py). This header is
-- not spliced.
--
-- It reads q (embedding, variant) from the statement, and holds the {memory_filters} and
-- {fact_filters} slots.
--   match_keys        the question's entity keys the tenant links to, not hubs
--   match_rows        the memories and facts linked to them (a memory also through a
--                     fact made from it)
--   entity_match_lane memories ranked among memories, facts among facts, by distance to
--                     the question (first variant), at most entity_match_memories and
--                     entity_match_facts
--
-- Parameters: tenant text, entity_match_memories and entity_match_facts int (how many of
-- each; both 0: off, nothing runs), entity_match_keys text[] (the question's candidate
-- keys: every 1-4 word span), hub_mentions int, and the filters'.
match_keys AS MATERIALIZED (
    SELECT named.entity_key
    FROM entity_mentions AS named
    WHERE %(entity_match_memories)s::int + %(entity_match_facts)s::int > 0
      AND named.tenant_id = %(tenant)s
      AND named.entity_key = ANY (%(entity_match_keys)s::text[])
      AND named.mentions <= %(hub_mentions)s
),
match_rows AS MATERIALIZED (
    SELECT 'memory'::text AS item, m.id, m.embedding
    FROM match_keys AS k
    CROSS JOIN LATERAL (
        {entity_memories}
    ) AS linked
    JOIN memories AS m ON m.id = linked.memory_id AND m.tenant_id = %(tenant)s
    WHERE %(entity_match_memories)s > 0
      AND m.embedding IS NOT NULL
      {memory_filters}
    UNION ALL
    SELECT 'fact'::text, f.id, f.embedding
    FROM match_keys AS k
    JOIN fact_entities AS fe ON fe.tenant_id = %(tenant)s AND fe.entity_key = k.entity_key
    JOIN facts AS f ON f.id = fe.fact_id AND f.tenant_id = %(tenant)s
    WHERE %(entity_match_facts)s > 0
      AND f.embedding IS NOT NULL
      {fact_filters}
),
entity_match_lane AS (
    SELECT ranked.item, ranked.id, 1::bigint AS variant, ranked.rank
    FROM (
        SELECT near.item, near.id,
               row_number() OVER (PARTITION BY near.item ORDER BY near.distance, near.id)
                   AS rank
        FROM (
            SELECT r.item, r.id, min(r.embedding <=> q.embedding) AS distance
            FROM match_rows AS r
            CROSS JOIN q
            WHERE q.variant = 1
            GROUP BY r.item, r.id
        ) AS near
    ) AS ranked
    WHERE ranked.rank <= CASE ranked.item WHEN 'memory' THEN %(entity_match_memories)s
                                          ELSE %(entity_match_facts)s END
)

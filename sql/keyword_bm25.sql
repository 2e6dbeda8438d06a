    -- keyword lane, true BM25 (pg_textsearch): ordered scans of the bm25 indexes.
    SELECT q.variant, hit.item, hit.id, hit.rank
    FROM q
    CROSS JOIN LATERAL (
        SELECT 'memory'::text AS item, ranked.id, row_number() OVER (ORDER BY ranked.score) AS rank
        FROM (
            SELECT m.id, m.text <@> to_bm25query(q.query, 'memories_text_bm25') AS score
            FROM memories AS m
            WHERE (%(sources)s::text[] IS NULL OR m.source = ANY (%(sources)s::text[]))
              AND (%(memory_kinds)s::text[] IS NULL OR m.kind = ANY (%(memory_kinds)s::text[]))
              AND (%(created_after)s::timestamptz IS NULL OR m.created_at >= %(created_after)s)
              AND (%(created_before)s::timestamptz IS NULL OR m.created_at < %(created_before)s)
              AND (%(event_after)s::timestamptz IS NULL OR m.event_at >= %(event_after)s)
              AND (%(event_before)s::timestamptz IS NULL OR m.event_at < %(event_before)s)
            ORDER BY score
            LIMIT %(keyword_memories)s
        ) AS ranked
        UNION ALL
        SELECT 'fact'::text, ranked.id, row_number() OVER (ORDER BY ranked.score)
        FROM (
            SELECT f.id, f.text <@> to_bm25query(q.query, 'facts_text_bm25') AS score
            FROM facts AS f
            WHERE (%(sources)s::text[] IS NULL OR f.source = ANY (%(sources)s::text[]))
              AND (%(created_after)s::timestamptz IS NULL OR f.created_at >= %(created_after)s)
              AND (%(created_before)s::timestamptz IS NULL OR f.created_at < %(created_before)s)
              AND (%(event_after)s::timestamptz IS NULL OR f.valid_from >= %(event_after)s)
              AND (%(event_before)s::timestamptz IS NULL OR f.valid_from < %(event_before)s)
              AND (CASE
                     WHEN %(as_of)s::timestamptz IS NOT NULL THEN
                          f.status <> 'retracted'
                      AND (f.valid_from IS NULL OR f.valid_from <= %(as_of)s)
                      AND (f.valid_to IS NULL OR f.valid_to > %(as_of)s)
                     WHEN %(include_expired)s THEN true
                     ELSE f.status = 'active' AND f.expired_at IS NULL
                   END)
            ORDER BY score
            LIMIT %(keyword_facts)s
        ) AS ranked
    ) AS hit

    -- keyword lane without pg_textsearch: tsvector match (websearch_to_tsquery), ts_rank_cd.
    SELECT q.variant, hit.item, hit.id, hit.rank
    FROM q
    CROSS JOIN LATERAL (
        SELECT 'memory'::text AS item, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id) AS rank
        FROM (
            SELECT m.id, ts_rank_cd(m.tsv, websearch_to_tsquery('english', q.query)) AS score
            FROM memories AS m
            WHERE (%(sources)s::text[] IS NULL OR m.source = ANY (%(sources)s::text[]))
              AND (%(memory_kinds)s::text[] IS NULL OR m.kind = ANY (%(memory_kinds)s::text[]))
              AND (%(created_after)s::timestamptz IS NULL OR m.created_at >= %(created_after)s)
              AND (%(created_before)s::timestamptz IS NULL OR m.created_at < %(created_before)s)
              AND (%(event_after)s::timestamptz IS NULL OR m.event_at >= %(event_after)s)
              AND (%(event_before)s::timestamptz IS NULL OR m.event_at < %(event_before)s)
              AND m.tsv @@ websearch_to_tsquery('english', q.query)
            ORDER BY score DESC, m.id
            LIMIT %(keyword_memories)s
        ) AS ranked
        UNION ALL
        SELECT 'fact'::text, ranked.id, row_number() OVER (ORDER BY ranked.score DESC, ranked.id)
        FROM (
            SELECT f.id, ts_rank_cd(f.tsv, websearch_to_tsquery('english', q.query)) AS score
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
              AND f.tsv @@ websearch_to_tsquery('english', q.query)
            ORDER BY score DESC, f.id
            LIMIT %(keyword_facts)s
        ) AS ranked
    ) AS hit

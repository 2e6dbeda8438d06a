-- A-MAC gate metrics for the current tenant: decisions, accept rate and the
-- distribution of composite scores (one bucket per point, 0-10).
--   %(tenant)s  text  the tenant (also elephant.tenant_id)
SELECT count(*)                                               AS total,
       count(*) FILTER (WHERE decision = 'accepted')          AS accepted,
       count(*) FILTER (WHERE decision = 'rejected')          AS rejected,
       count(*) FILTER (WHERE decision = 'forced')            AS forced,
       count(*) FILTER (WHERE decision = 'duplicate')         AS duplicate,
       count(*) FILTER (WHERE scorer LIKE '%%fallback%%')      AS llm_fallbacks,
       avg(relevance)                                         AS mean_relevance,
       avg(novelty)                                           AS mean_novelty,
       avg(specificity)                                       AS mean_specificity,
       avg(composite)                                         AS mean_composite,
       coalesce(
           (SELECT jsonb_object_agg(bucket, n ORDER BY bucket)
              FROM (SELECT least(floor(composite)::int, 9) AS bucket, count(*) AS n
                      FROM admission_log
                     WHERE tenant_id = %(tenant)s AND composite IS NOT NULL
                     GROUP BY 1) AS buckets),
           '{}'::jsonb)                                       AS composite_histogram
FROM admission_log
WHERE tenant_id = %(tenant)s;

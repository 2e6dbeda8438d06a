-- Memory lifecycle (migration 0010): activation, and the maintenance schedule.
--
-- Re-applied on every upgrade (see migrations/README.md): the current definitions, with
-- CREATE OR REPLACE only. Grants and comments are in migration 0010.
--
--   SELECT m.id, elephant_activation(m.importance,
--              greatest(m.created_at, m.last_seen_at, a.last_accessed_at), a.access_count,
--              now(), 23, 3, 0.25) AS activation
--     FROM memories AS m LEFT JOIN access_stats AS a ON a.item_id = m.id
--    ORDER BY activation;

-- min(1, importance/100 x (1 + access_boost x ln(1 + access_count))) x 0.5^(age / half-life),
-- the half-life x importance_factor^((importance - 50) / 50); the exponent held to 0-200
-- half-lives (a future anchor counts as now; a very old one cannot underflow float8).
--
-- No SET clause, unlike every other function here: a SQL function with one is never
-- inlined, so search called it once per fused row (measured 0.75-0.84x the statement's
-- p50 inlined, identical results). It is not SECURITY DEFINER and reads no table; its
-- functions are schema-qualified instead, so the caller's search_path cannot redirect
-- them (EXTRACT is parsed as pg_catalog.extract). tests/integration/test_search_plans.py proves the
-- plan holds no call.
CREATE OR REPLACE FUNCTION elephant_activation(
    p_importance real, p_anchor timestamptz, p_access_count integer,
    p_at timestamptz, p_half_life_days double precision,
    p_importance_factor double precision, p_access_boost double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT least(1.0, greatest(0.0, coalesce(p_importance, 50)::float8 / 100.0)
                      * (1.0 + greatest(0.0, p_access_boost)
                               * pg_catalog.ln(1.0 + greatest(coalesce(p_access_count, 0), 0))))
           * pg_catalog.power(0.5, least(200.0, greatest(0.0,
                 extract(epoch FROM p_at - coalesce(p_anchor, p_at)) / 86400.0
                 / (greatest(p_half_life_days, 0.001)
                    * pg_catalog.power(greatest(p_importance_factor, 1.0),
                            (least(100, greatest(0, coalesce(p_importance, 50))) - 50)
                            / 50.0)))))
$$;

-- Every tenant id, for the worker role. It opens the policy maintenance_scope on tenants
-- for the owner while its query runs, and puts the setting back (set_config, not a SET
-- clause: a SET clause on a custom setting needs a superuser to create).
CREATE OR REPLACE FUNCTION elephant_maintenance_tenants()
RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
DECLARE
    v_scope text := current_setting('elephant.maintenance_scope', true);
BEGIN
    PERFORM set_config('elephant.maintenance_scope', 'on', true);
    RETURN QUERY SELECT id FROM tenants ORDER BY id;
    PERFORM set_config('elephant.maintenance_scope', coalesce(v_scope, ''), true);
END
$$;

-- Queue a maintenance job (kind maintain_*) for each tenant with none queued or running
-- and none created in the last p_every_seconds. An advisory lock per kind serialises
-- schedulers; the unique index jobs_one_maintenance backs it.
CREATE OR REPLACE FUNCTION elephant_schedule_maintenance(
    p_kind text, p_every_seconds integer, p_max_attempts integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
DECLARE
    v_added integer;
    v_scope text := current_setting('elephant.maintenance_scope', true);
BEGIN
    IF p_kind IS NULL OR p_kind !~ '^maintain_[a-z_]{1,40}$' THEN
        RAISE EXCEPTION 'not a maintenance job kind: %', p_kind USING ERRCODE = '22023';
    END IF;
    IF p_every_seconds IS NULL OR p_every_seconds < 60 THEN
        RAISE EXCEPTION 'interval must be at least 60 seconds, got %', p_every_seconds
              USING ERRCODE = '22023';
    END IF;
    IF p_max_attempts IS NULL OR p_max_attempts < 1 OR p_max_attempts > 100 THEN
        RAISE EXCEPTION 'max attempts must be 1..100, got %', p_max_attempts
              USING ERRCODE = '22023';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('elephant_schedule_maintenance'), hashtext(p_kind));
    PERFORM set_config('elephant.maintenance_scope', 'on', true);
    WITH added AS (
        INSERT INTO jobs (tenant_id, kind, payload, max_attempts)
        SELECT t.id, p_kind, '{"trigger": "schedule"}'::jsonb, p_max_attempts
          FROM tenants AS t
         WHERE NOT EXISTS (
               SELECT 1 FROM jobs AS j
                WHERE j.tenant_id = t.id AND j.kind = p_kind
                  AND (j.status IN ('queued', 'running')
                       OR j.created_at > now() - make_interval(secs => p_every_seconds)))
        ON CONFLICT DO NOTHING
        RETURNING 1)
    SELECT count(*)::integer INTO v_added FROM added;
    PERFORM set_config('elephant.maintenance_scope', coalesce(v_scope, ''), true);
    RETURN v_added;
END
$$;

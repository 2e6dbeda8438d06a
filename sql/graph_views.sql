-- Analyst views of the knowledge graph and of current facts.
--
-- The graph lives in Apache AGE, one graph per tenant (table `graphs`). These
-- views expose it as ordinary columns, whatever the caller's search_path (no
-- ag_catalog needed). They run with the caller's rights: the app role sees only
-- its tenant's rows (row-level security on `graphs`), a superuser sees every tenant.
--
--   SELECT name, role, domain FROM graph_entities WHERE role = 'decision';
--   SELECT source, relation, target FROM graph_relations WHERE valid_to IS NULL;
--   SELECT text, valid_from FROM current_facts WHERE 'caroline' = ANY (entity_keys);

CREATE FUNCTION elephant_graph_entities()
RETURNS TABLE (tenant_id text, key text, name text, role text, domain text, epistemic text,
               source text, valid_from timestamptz, valid_to timestamptz,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT t.tenant_id, t.graph_name FROM graphs AS t ORDER BY t.tenant_id LOOP
        RETURN QUERY EXECUTE format(
            $q$SELECT %L::text, p->>'key', p->>'name', p->>'role', p->>'domain',
                      p->>'epistemic', p->>'source', (p->>'valid_from')::timestamptz,
                      (p->>'valid_to')::timestamptz, (p->>'created_at')::timestamptz,
                      (p->>'updated_at')::timestamptz
                 FROM (SELECT properties::text::jsonb AS p FROM %I."Entity") AS v$q$,
            g.tenant_id, g.graph_name);
    END LOOP;
END
$fn$;

CREATE FUNCTION elephant_graph_relations()
RETURNS TABLE (tenant_id text, source text, relation text, target text, epistemic text,
               valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT t.tenant_id, t.graph_name FROM graphs AS t ORDER BY t.tenant_id LOOP
        RETURN QUERY EXECUTE format(
            $q$SELECT %L::text, s.properties::text::jsonb->>'name', c.relname::text,
                      d.properties::text::jsonb->>'name', r.p->>'epistemic',
                      (r.p->>'valid_from')::timestamptz, (r.p->>'valid_to')::timestamptz,
                      (r.p->>'recorded_at')::timestamptz
                 FROM (SELECT e.tableoid, e.start_id, e.end_id, e.properties::text::jsonb AS p
                         FROM %I._ag_label_edge AS e) AS r
                 JOIN pg_class AS c ON c.oid = r.tableoid
                 JOIN %I."Entity" AS s ON s.id OPERATOR(ag_catalog.=) r.start_id
                 JOIN %I."Entity" AS d ON d.id OPERATOR(ag_catalog.=) r.end_id$q$,
            g.tenant_id, g.graph_name, g.graph_name, g.graph_name);
    END LOOP;
END
$fn$;

CREATE VIEW graph_entities WITH (security_invoker = true) AS SELECT * FROM elephant_graph_entities();

CREATE VIEW graph_relations WITH (security_invoker = true) AS SELECT * FROM elephant_graph_relations();

-- Facts true now: not retracted or superseded, inside their validity interval.
CREATE VIEW current_facts WITH (security_invoker = true) AS
SELECT f.tenant_id, f.id, f.text, f.subject, f.fact_type, f.observation_kind, f.source,
       f.valid_from, f.valid_to, f.recorded_at, f.importance, f.confidence,
       coalesce((SELECT array_agg(fe.entity_key ORDER BY fe.entity_key)
                   FROM fact_entities AS fe WHERE fe.fact_id = f.id), '{}') AS entity_keys
  FROM facts AS f
 WHERE f.status = 'active'
   AND f.expired_at IS NULL
   AND (f.valid_from IS NULL OR f.valid_from <= now())
   AND (f.valid_to IS NULL OR f.valid_to > now());

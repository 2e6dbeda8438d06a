-- Analyst views of the knowledge graph and of current facts.
--
-- Re-applied on every upgrade (see migrations/README.md): this file is the current
-- definition, so it uses CREATE OR REPLACE only and must stay idempotent. A change of a
-- view's columns or of a function's result columns needs a migration (CREATE OR REPLACE
-- cannot drop, rename or retype them); anything else is edited here.
--
-- The graph lives in Apache AGE, one graph per tenant (table `graphs`), or in the
-- relational tables kg_entities / kg_relations (graph.backend = relational). These
-- views expose it as ordinary columns, whatever the caller's search_path (no
-- ag_catalog needed). They run with the caller's rights: the app role sees only
-- its tenant's rows (row-level security on `graphs`), a superuser sees every tenant.
--
--   SELECT name, role, domain FROM graph_entities WHERE role = 'decision';
--   SELECT source, relation, target FROM graph_relations WHERE valid_to IS NULL;
--   SELECT text, valid_from FROM current_facts WHERE 'caroline' = ANY (entity_keys);

CREATE OR REPLACE FUNCTION elephant_graph_entities()
RETURNS TABLE (tenant_id text, key text, name text, role text, domain text, epistemic text,
               source text, valid_from timestamptz, valid_to timestamptz,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public AS $fn$
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
    -- The relational backend's tables (migration 0008); dynamic SQL, so the function
    -- still works on a database downgraded below 0008.
    IF to_regclass('public.kg_entities') IS NOT NULL THEN
        RETURN QUERY EXECUTE
            $q$SELECT e.tenant_id, e.key COLLATE "default", e.name, e.role, e.domain,
                      e.epistemic, e.source, e.valid_from, e.valid_to, e.created_at,
                      e.updated_at
                 FROM kg_entities AS e ORDER BY e.tenant_id, e.key$q$;
    END IF;
END
$fn$;

CREATE OR REPLACE FUNCTION elephant_graph_relations()
RETURNS TABLE (tenant_id text, source text, relation text, target text, epistemic text,
               valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public AS $fn$
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
    IF to_regclass('public.kg_relations') IS NOT NULL THEN
        RETURN QUERY EXECUTE
            $q$SELECT r.tenant_id, s.name, r.relation_type, d.name, r.epistemic,
                      r.valid_from, r.valid_to, r.recorded_at
                 FROM kg_relations AS r
                 JOIN kg_entities AS s ON s.tenant_id = r.tenant_id AND s.key = r.source_key
                 JOIN kg_entities AS d ON d.tenant_id = r.tenant_id AND d.key = r.target_key$q$;
    END IF;
END
$fn$;

CREATE OR REPLACE VIEW graph_entities WITH (security_invoker = true) AS
SELECT * FROM elephant_graph_entities();

CREATE OR REPLACE VIEW graph_relations WITH (security_invoker = true) AS
SELECT * FROM elephant_graph_relations();

-- Facts true now: not retracted or superseded, inside their validity interval.
CREATE OR REPLACE VIEW current_facts WITH (security_invoker = true) AS
SELECT f.tenant_id, f.id, f.text, f.subject, f.fact_type, f.observation_kind, f.source,
       f.valid_from, f.valid_to, f.recorded_at, f.importance, f.confidence,
       coalesce((SELECT array_agg(fe.entity_key ORDER BY fe.entity_key)
                   FROM fact_entities AS fe WHERE fe.fact_id = f.id), '{}') AS entity_keys
  FROM facts AS f
 WHERE f.status = 'active'
   AND f.expired_at IS NULL
   AND (f.valid_from IS NULL OR f.valid_from <= now())
   AND (f.valid_to IS NULL OR f.valid_to > now());

-- Per tenant and entity: how many memories (memory_entities, migration 0020) and facts
-- (fact_entities) name it, and its most frequent type. An entity named by more rows than
-- search.hub_mentions is a hub (entity expansion skips it). A condition on tenant_id and
-- entity_key is pushed into both tables' (tenant_id, entity_key) indexes:
--   SELECT entity_key, mentions FROM entity_mentions
--    WHERE tenant_id = 't' AND entity_key = ANY ('{caroline,sweden}');
CREATE OR REPLACE VIEW entity_mentions WITH (security_invoker = true) AS
SELECT l.tenant_id, l.entity_key,
       (sum(l.memories))::integer AS memories,
       (sum(l.facts))::integer AS facts,
       (sum(l.memories) + sum(l.facts))::integer AS mentions,
       (SELECT mode() WITHIN GROUP (ORDER BY me.entity_type)
          FROM memory_entities AS me
         WHERE me.tenant_id = l.tenant_id AND me.entity_key = l.entity_key) AS entity_type
  FROM (SELECT m.tenant_id, m.entity_key, count(*) AS memories, 0::bigint AS facts
          FROM memory_entities AS m GROUP BY m.tenant_id, m.entity_key
        UNION ALL
        SELECT f.tenant_id, f.entity_key, 0::bigint, count(*)
          FROM fact_entities AS f GROUP BY f.tenant_id, f.entity_key) AS l
 GROUP BY l.tenant_id, l.entity_key;

-- Elephant on Citus, step 2 of 2: distribute the schema. NOT RUN HERE (no container
-- engine on the machine this was written on); see deploy/citus/README.md.
--
--   psql "$COORDINATOR_URL" -v ON_ERROR_STOP=1 -f deploy/citus/distribute.sql
--
-- Run once on the coordinator, after `elephant migrate` built the schema there and
-- the workers were added (README step 3), while the tables are still empty.
-- Design and trade-offs: docs/scale-out.md.
--
-- Distributed by tenant_id, all in one colocation group, so a tenant's rows of every
-- table live in the same shard and a tenant-filtered statement is a single-shard
-- router query (joins, recursive CTEs and foreign keys stay inside that shard).
-- Reference (a copy on every node): tenants, the target of every table's foreign key;
-- analysts and analyst_grants, which the analyst policies of every distributed table
-- read on the node that holds the shard (migration 0015).
-- coordinator-local: jobs, api_keys, audit_log, graphs, elephant_meta, alembic_version, maintenance_runs, console_sessions, keyword_index_repairs
--   (jobs: the worker's cross-tenant FOR UPDATE SKIP LOCKED claim needs one table;
--    api_keys, audit_log: tenant_id may be NULL, which a distribution column cannot be;
--    console_sessions: no tenant_id; rows of api_keys' sessions, next to api_keys;
--    graphs: Apache AGE bookkeeping, empty on Citus (no AGE); elephant_meta,
--    alembic_version: singletons read at start and by migrations; keyword_index_repairs:
--    admin-only bookkeeping of pg_textsearch rebuilds, empty on Citus without it.)

\set ON_ERROR_STOP on

-- 1. The constraints Citus requires (plain SQL, tested on the embedded PostgreSQL).
\ir prepare.sql

-- No transaction around the rest: Citus restricts some DDL after a reference table
-- was touched in the same transaction; each statement commits, and ON_ERROR_STOP
-- stops at the first failure.

-- 2. AGE-only trigger (drops a tenant's AGE graph); AGE does not run on Citus and a
--    reference table with a trigger would need citus.enable_unsafe_triggers.
DROP TRIGGER IF EXISTS tenants_drop_graph ON tenants;
--    The statement triggers that drop a deleted memory's or fact's access_stats row use
--    transition tables, which Citus does not support on distributed tables: dropped
--    too. Left over, such a row holds an id and a count, no text (erasing a tenant still
--    removes them: the foreign key to tenants cascades).
DROP TRIGGER IF EXISTS memories_forget_access ON memories;
DROP TRIGGER IF EXISTS facts_forget_access ON facts;

-- 3. Reference table first: the distributed tables' foreign keys point at it.
SELECT create_reference_table('tenants');
SELECT create_reference_table('analysts');
SELECT create_reference_table('analyst_grants');

-- 4. Distributed tables, parents before children (a foreign key between distributed
--    tables needs both distributed and colocated). 32 shards: enough to rebalance
--    onto 16+ workers later; shard count is fixed per colocation group.
SET citus.shard_count = 32;
SELECT create_distributed_table('conversations', 'tenant_id');
SELECT create_distributed_table('turns', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('memories', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('facts', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('fact_entities', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('memory_entities', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('contradictions', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('feedback', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('passages', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('admission_log', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('handoffs', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('llm_usage', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('kg_entities', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('kg_relations', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('access_stats', 'tenant_id', colocate_with => 'conversations');
SELECT create_distributed_table('tenant_vector_ways', 'tenant_id', colocate_with => 'conversations');

-- 5. jobs, graphs and maintenance_runs (small, operational) keep their foreign key to tenants (now a reference table), which
--    makes them "Citus managed local tables" on the coordinator; Citus may already
--    have done so (citus.enable_local_reference_table_foreign_keys, on by default).
SELECT citus_add_local_table_to_metadata(t::regclass)
  FROM unnest(ARRAY['jobs', 'graphs', 'maintenance_runs']) AS t
 WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = t::regclass);

-- 6. Row-level security reads elephant.tenant_id on the workers too: Citus sends a
--    transaction's SET LOCAL statements to the workers only with this setting, and
--    only SET LOCAL statements, not set_config() calls (docs/scale-out.md, "Row-level
--    security"). The same holds for hnsw.ef_search and hnsw.iterative_scan.
ALTER ROLE elephant_app SET citus.propagate_set_commands = 'local';
ALTER ROLE elephant_worker SET citus.propagate_set_commands = 'local';

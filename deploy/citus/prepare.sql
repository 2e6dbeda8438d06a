-- Elephant on Citus, step 1 of 2: the constraints Citus needs, in plain PostgreSQL.
--
-- Run after `elephant migrate` and before distribute.sql (which includes this file).
-- Citus requires every PRIMARY KEY / UNIQUE constraint of a distributed table to
-- include the distribution column (tenant_id), and every foreign key between two
-- distributed tables to include it on both sides; it rejects ON DELETE SET NULL /
-- SET DEFAULT on a foreign key that includes it. This file rewrites exactly the
-- constraints docs/scale-out.md lists under "Unique indexes and foreign keys that
-- change". It is plain SQL (no Citus function), so tests/integration/test_scale_out_docs.py runs
-- it on the embedded PostgreSQL and checks the result.
--
-- Foreign keys that were ON DELETE SET NULL are dropped, not rewritten: the
-- application must null those columns itself (docs/scale-out.md, "Application
-- changes"). All statements are idempotent where PostgreSQL allows it.

BEGIN;

-- 1. Foreign keys between tables that become distributed (they point at the
--    single-column keys dropped below).
ALTER TABLE turns          DROP CONSTRAINT IF EXISTS turns_conversation_id_fkey;
ALTER TABLE memories       DROP CONSTRAINT IF EXISTS memories_conversation_id_fkey;
ALTER TABLE memories       DROP CONSTRAINT IF EXISTS memories_superseded_by_fkey;
ALTER TABLE facts          DROP CONSTRAINT IF EXISTS facts_conversation_id_fkey;
ALTER TABLE facts          DROP CONSTRAINT IF EXISTS facts_memory_id_fkey;
ALTER TABLE facts          DROP CONSTRAINT IF EXISTS facts_superseded_by_fkey;
ALTER TABLE admission_log  DROP CONSTRAINT IF EXISTS admission_log_memory_id_fkey;
ALTER TABLE contradictions DROP CONSTRAINT IF EXISTS contradictions_newer_fact_id_fkey;
ALTER TABLE contradictions DROP CONSTRAINT IF EXISTS contradictions_older_fact_id_fkey;
ALTER TABLE feedback       DROP CONSTRAINT IF EXISTS feedback_fact_id_fkey;
ALTER TABLE feedback       DROP CONSTRAINT IF EXISTS feedback_memory_id_fkey;
ALTER TABLE handoffs       DROP CONSTRAINT IF EXISTS handoffs_conversation_id_fkey;
ALTER TABLE fact_entities  DROP CONSTRAINT IF EXISTS fact_entities_fact_id_fkey;
ALTER TABLE memory_entities DROP CONSTRAINT IF EXISTS memory_entities_memory_id_fkey;
ALTER TABLE passages       DROP CONSTRAINT IF EXISTS passages_memory_id_fkey;
ALTER TABLE passages       DROP CONSTRAINT IF EXISTS passages_turn_id_fkey;

-- 2. Primary keys and unique constraints: tenant_id first (it also serves the
--    tenant-scoped lookups by id that row-level security turns every query into).
ALTER TABLE conversations  DROP CONSTRAINT conversations_pkey,
                           ADD CONSTRAINT conversations_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE turns          DROP CONSTRAINT turns_pkey,
                           ADD CONSTRAINT turns_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE turns          DROP CONSTRAINT turns_conversation_id_seq_key,
                           ADD CONSTRAINT turns_conversation_id_seq_key
                               UNIQUE (tenant_id, conversation_id, seq);
ALTER TABLE memories       DROP CONSTRAINT memories_pkey,
                           ADD CONSTRAINT memories_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE facts          DROP CONSTRAINT facts_pkey,
                           ADD CONSTRAINT facts_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE fact_entities  DROP CONSTRAINT fact_entities_pkey,
                           ADD CONSTRAINT fact_entities_pkey
                               PRIMARY KEY (tenant_id, fact_id, entity_key);
ALTER TABLE contradictions DROP CONSTRAINT contradictions_pkey,
                           ADD CONSTRAINT contradictions_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE contradictions DROP CONSTRAINT contradictions_older_fact_id_newer_fact_id_key,
                           ADD CONSTRAINT contradictions_older_fact_id_newer_fact_id_key
                               UNIQUE (tenant_id, older_fact_id, newer_fact_id);
ALTER TABLE admission_log  DROP CONSTRAINT admission_log_pkey,
                           ADD CONSTRAINT admission_log_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE feedback       DROP CONSTRAINT feedback_pkey,
                           ADD CONSTRAINT feedback_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE handoffs       DROP CONSTRAINT handoffs_pkey,
                           ADD CONSTRAINT handoffs_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE llm_usage      DROP CONSTRAINT llm_usage_pkey,
                           ADD CONSTRAINT llm_usage_pkey PRIMARY KEY (tenant_id, id);
ALTER TABLE passages       DROP CONSTRAINT passages_pkey,
                           ADD CONSTRAINT passages_pkey PRIMARY KEY (tenant_id, id);
DROP INDEX passages_turn;
CREATE UNIQUE INDEX passages_turn ON passages (tenant_id, turn_id, ordinal);
DROP INDEX passages_memory;
CREATE UNIQUE INDEX passages_memory ON passages (tenant_id, memory_id, ordinal);

-- 3. The cascading foreign keys again, now through (tenant_id, ...): colocated
--    tables keep them on every shard.
ALTER TABLE turns ADD CONSTRAINT turns_conversation_id_fkey
    FOREIGN KEY (tenant_id, conversation_id) REFERENCES conversations (tenant_id, id)
    ON DELETE CASCADE;
ALTER TABLE contradictions ADD CONSTRAINT contradictions_newer_fact_id_fkey
    FOREIGN KEY (tenant_id, newer_fact_id) REFERENCES facts (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE contradictions ADD CONSTRAINT contradictions_older_fact_id_fkey
    FOREIGN KEY (tenant_id, older_fact_id) REFERENCES facts (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE feedback ADD CONSTRAINT feedback_fact_id_fkey
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE feedback ADD CONSTRAINT feedback_memory_id_fkey
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE fact_entities ADD CONSTRAINT fact_entities_fact_id_fkey
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE memory_entities ADD CONSTRAINT memory_entities_memory_id_fkey
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE passages ADD CONSTRAINT passages_memory_id_fkey
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE passages ADD CONSTRAINT passages_turn_id_fkey
    FOREIGN KEY (tenant_id, turn_id) REFERENCES turns (tenant_id, id) ON DELETE CASCADE;

COMMIT;

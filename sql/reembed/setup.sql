-- Re-embedding to a new model (app/services/ops/reembed/phases.py): the state of the one re-embed in
-- progress and the trigger that keeps its new vectors honest. Run by `start` (idempotent);
-- both are dropped when the re-embed finishes or is cancelled, so a database that is not
-- re-embedding has exactly the schema its migrations made.
--
-- The new vectors live in an `embedding_next vector(D)` column beside `embedding` in
-- memories, facts and passages (added by the code: D is the target's dimension).

CREATE TABLE IF NOT EXISTS elephant_reembed (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    target     jsonb NOT NULL,
    from_model text NOT NULL,
    from_dim   integer NOT NULL,
    phase      text NOT NULL CHECK (phase IN ('backfill', 'catchup', 'index', 'swap', 'finish')),
    cursors    jsonb NOT NULL DEFAULT '{}'::jsonb,
    indexes    jsonb NOT NULL DEFAULT '[]'::jsonb,
    embedded   bigint NOT NULL DEFAULT 0,
    swap_xid   text,
    swapped_at timestamptz,
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    last_error text
);

COMMENT ON TABLE elephant_reembed IS
    'The re-embed to a new embedding model in progress (one row; absent when none is): '
    'target (provider, model, dim, prefixes), the model it replaces, phase (backfill, '
    'catchup, index, swap, finish), the backfill''s keyset cursor per table, the HNSW '
    'indexes being rebuilt on embedding_next, vectors written so far, the last error. '
    'Read it with `elephant maintain reembed --status` or `elephant doctor`.';

-- A row whose text or vector changes after it was re-embedded loses its new vector, so
-- the catch-up pass embeds it again (BEFORE UPDATE OF the columns its text comes from;
-- a write that sets embedding_next itself, the re-embed's own, keeps it).
CREATE OR REPLACE FUNCTION elephant_reembed_reset() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF NEW.embedding_next IS NOT DISTINCT FROM OLD.embedding_next THEN
        NEW.embedding_next := NULL;
    END IF;
    RETURN NEW;
END
$$;

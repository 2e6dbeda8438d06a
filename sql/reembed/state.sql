-- The re-embed in progress (app/services/ops/reembed/state.py): its one row in
-- elephant_reembed (sql/reembed/setup.sql), or none when no re-embed is running.
-- target is the model being moved to (provider, model, dim, prefixes); cursors the
-- backfill's last id per table; indexes the HNSW twins being built on embedding_next.
SELECT target, from_model, from_dim, phase, cursors, indexes, embedded, swap_xid,
       swapped_at, started_at, updated_at, last_error
  FROM elephant_reembed

-- Memories to re-embed (app/services/ops/reembed/rows.py): id and version (the text,
-- sql/reembed/version_memories.sql). The code composes in, with psycopg.sql, the
-- version expression and the condition that picks the rows (a keyset batch, the rows
-- still without a new vector, or given ids).
SELECT m.id::text, {version}
  FROM memories AS m
 WHERE {where}

-- Facts to re-embed (app/services/ops/reembed/rows.py): id and version (the text the
-- vector is made from, sql/reembed/version_facts.sql). The code composes in, with
-- psycopg.sql, the version expression and the condition that picks the rows (a keyset
-- batch, the rows still without a new vector, or given ids).
SELECT f.id::text, {version}
  FROM facts AS f
 WHERE {where}

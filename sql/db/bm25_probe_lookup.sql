-- The BM25 lane's top rows for one word through one index (app/db/keyword_index.py,
-- probe_index): the probe checks that the sampled row is among them with a score. Every
-- tenant's rows, as the migrator. The table is composed in with psycopg.sql (an
-- identifier).
-- Parameters (positional): word, index, word, index again; how many rows.
SELECT id::text, text <@> to_bm25query(%s, %s)
  FROM {table}
 ORDER BY text <@> to_bm25query(%s, %s)
 LIMIT %s

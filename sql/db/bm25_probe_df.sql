-- How many rows hold a word, up to a cap (app/db/keyword_index.py, _rare_word): the GIN
-- index on tsv counts them, so the probe picks a word rare enough to expect its row
-- among the BM25 lane's top hits. Every tenant's rows, as the migrator. The table is
-- composed in with psycopg.sql (an identifier).
-- Parameters (positional): the word; the cap.
SELECT count(*)
  FROM (SELECT 1 FROM {table} WHERE tsv @@ plainto_tsquery('english', %s) LIMIT %s) AS held

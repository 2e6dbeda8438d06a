-- The BM25 probe's sample (app/db/keyword_index.py, _sample): the rows of one heap page,
-- read by a TID range scan (one page, whatever the table's size), across every tenant
-- as the migrator. The table is composed in with psycopg.sql (an identifier).
-- Parameters (positional): the page, the page after it (bigint).
SELECT id::text, text
  FROM {table}
 WHERE ctid >= ('(' || %s::bigint || ',0)')::tid
   AND ctid < ('(' || %s::bigint || ',0)')::tid

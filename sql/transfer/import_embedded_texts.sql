-- Import (app/services/transfer/importer.py, _embed): a batch of the texts to embed for
-- one table's rows in the file, in file order, the text each write path embedded. The
-- code composes in {text}, that text's expression over the row `r` (EMBEDDED_TEXT), and
-- {table}, the table.
-- Parameters, in order: the fields left out (text[], the vectors); the table (its
-- section); the line number after which the batch starts; the batch size.
SELECT s.n, {text}
  FROM elephant_import_rows AS s
 CROSS JOIN LATERAL jsonb_populate_record(NULL::{table}, (s.line -> 'row') - %s::text[]) AS r
 WHERE s.line ->> 'table' = %s AND s.n > %s
 ORDER BY s.n
 LIMIT %s

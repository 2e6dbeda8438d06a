-- A passage's version for the re-embed (app/services/ops/reembed/rows.py): the span of
-- its turn or note it covers (the text itself is read beside it, sql/reembed/
-- rows_passages.sql). Checked again when the new vector is written: a row whose span
-- moved meanwhile is left to the catch-up.
p.char_start || ':' || p.char_end

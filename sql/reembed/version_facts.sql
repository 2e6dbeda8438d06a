-- A fact's version for the re-embed (app/services/ops/reembed/rows.py): the text its
-- vector is made from, as the write paths build it. An extracted fact embeds its text; a
-- graph observation 'name: text' (a note) or 'name (kind): text'
-- (app/services/graph/operations.py). Read with the row, checked again when the new
-- vector is written: a row whose version moved meanwhile is left to the catch-up.
CASE WHEN f.observation_kind IS NULL THEN f.text
     WHEN f.observation_kind = 'note' THEN coalesce(f.subject, '') || ': ' || f.text
     ELSE coalesce(f.subject, '') || ' (' || f.observation_kind || '): ' || f.text END

-- Passages to re-embed (app/services/ops/reembed/rows.py): id, version (the span,
-- sql/reembed/version_passages.sql) and what the text is cut from: the span, and the
-- turn's speaker, text and date (a passage of a conversation) or the note's text (a
-- passage of a long note), as app/services/memory/passages.py builds it. The code
-- composes in, with psycopg.sql, the version expression and the condition that picks
-- the rows (a keyset batch, the rows still without a new vector, or given ids).
SELECT p.id::text, {version},
       p.char_start, p.char_end, t.speaker, t.text, t.occurred_at, n.text
  FROM passages AS p
  LEFT JOIN turns AS t ON t.id = p.turn_id
  LEFT JOIN memories AS n ON n.id = p.memory_id
 WHERE {where}

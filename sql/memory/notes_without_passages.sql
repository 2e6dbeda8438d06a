-- Passages backfill (app/services/memory/passages.py, backfill): long notes (more words
-- than one passage holds) stored without passages, oldest first.
-- Parameters: tenant; words (int: a passage's words); limit (int).
SELECT m.id, m.text
  FROM memories AS m
 WHERE m.tenant_id = %(tenant)s AND m.kind = 'note'
   AND NOT EXISTS (SELECT 1 FROM passages AS p
                    WHERE p.tenant_id = m.tenant_id AND p.memory_id = m.id)
   AND array_length(regexp_split_to_array(btrim(m.text), '\s+'), 1) > %(words)s
 ORDER BY m.created_at
 LIMIT %(limit)s

-- The entity backfill (app/services/graph/mentions.py, backfill): the next batch of the
-- tenant's memories after a memory id, in id order (keyset), so every memory stored
-- before migration 0020 is linked once, a batch per job.
-- Parameters: tenant; after (uuid; the nil uuid to start); limit.
SELECT id FROM memories
 WHERE tenant_id = %(tenant)s AND id > %(after)s
 ORDER BY id
 LIMIT %(limit)s

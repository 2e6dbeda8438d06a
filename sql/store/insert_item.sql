-- Store: a new version of an item, as a note (searched like any note; facts extracted
-- from it). The previous version, if any, was superseded just before (supersede_item.sql).
--   tenant, text (what is indexed), embedding (NULL while the embedder is down),
--   source, digest (unique per version: an item's text may repeat), metadata,
--   namespace, key, value (jsonb), created (the item's first put, or NULL: now)
-- The clock, not the transaction's start: versions are ordered as the item's lock
-- admitted their puts, and a put that waited for the lock started before the one it follows.
WITH clock AS (SELECT clock_timestamp() AS at)
INSERT INTO memories (tenant_id, kind, text, embedding, source, content_hash, metadata,
                      item_namespace, item_key, item_value, item_created_at, created_at,
                      last_seen_at)
SELECT %(tenant)s, 'note', %(text)s, %(embedding)s, %(source)s, %(digest)s, %(metadata)s,
       %(namespace)s, %(key)s, %(value)s, coalesce(%(created)s, clock.at), clock.at, clock.at
  FROM clock
RETURNING id, item_created_at, created_at

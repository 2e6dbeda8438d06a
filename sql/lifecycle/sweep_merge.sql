-- Dedup sweep (app/services/lifecycle/sweep.py, merge): note `gone` folded into note
-- `keep`: seen counts added, the latest sighting, the higher importance, the event time
-- if keep has none; keep stays dormant only if both were.
-- Parameters: tenant, keep, gone (memory ids).
UPDATE memories AS keep
   SET seen_count = keep.seen_count + gone.seen_count,
       last_seen_at = greatest(keep.last_seen_at, gone.last_seen_at),
       importance = greatest(keep.importance, gone.importance),
       event_at = coalesce(keep.event_at, gone.event_at),
       dormant_at = CASE WHEN gone.dormant_at IS NULL THEN NULL ELSE keep.dormant_at END
  FROM memories AS gone
 WHERE keep.tenant_id = %(tenant)s AND keep.id = %(keep)s
   AND gone.tenant_id = %(tenant)s AND gone.id = %(gone)s

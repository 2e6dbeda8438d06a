-- Contradiction detection (app/services/facts/contradictions.py, _close): the older fact,
-- if still active, is superseded by the newer one and closed in time. An undated newer
-- fact was true from when its source was written (its memory's event or commit time),
-- not from whenever the job happens to run; valid_to never precedes the older fact's
-- own valid_from.
-- Parameters: tenant; older, newer (uuid).
UPDATE facts AS old
   SET status = 'superseded',
       superseded_by = new.id,
       expired_at = greatest(now(), old.recorded_at),
       valid_to = greatest(coalesce(new.valid_from,
                                    (SELECT coalesce(m.event_at, m.created_at)
                                       FROM memories m
                                      WHERE m.tenant_id = new.tenant_id AND m.id = new.memory_id),
                                    now()),
                           coalesce(old.valid_from, '-infinity'))
  FROM facts AS new
 WHERE old.tenant_id = %(tenant)s AND old.id = %(older)s
   AND new.tenant_id = %(tenant)s AND new.id = %(newer)s
   AND old.status = 'active'

-- Graph writes (app/services/graph/operations.py, _close_facts): active observation facts
-- closed (invalidated or superseded): status set, valid from no later than now, expired
-- now, the reason (and the superseding entity) added to their metadata.
-- Parameters, in order: status, the note (jsonb), tenant, fact ids (uuid[]).
UPDATE facts SET status = %s, valid_to = greatest(now(), valid_from), expired_at = now(),
metadata = metadata || %s::jsonb
WHERE tenant_id = %s AND id = ANY(%s) AND status = 'active'

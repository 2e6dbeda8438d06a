-- Fragment: which gate decisions a listing holds (app/services/gate/decisions.py),
-- spliced in where a line holds only {decision_filter}, after a WHERE.
--   %(tenant)s    text  the tenant
--   %(decision)s  text  only this decision (accepted, rejected, forced, duplicate); NULL: all
--   %(kind)s      text  only this kind (note, window); NULL: both
tenant_id = %(tenant)s
AND (%(decision)s::text IS NULL OR decision = %(decision)s)
AND (%(kind)s::text IS NULL OR kind = %(kind)s)

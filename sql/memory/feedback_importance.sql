-- Feedback (app/services/memory/feedback.py): move a memory's or a fact's importance
-- by the feedback's delta, within 0-100; helpful feedback also wakes a dormant row.
-- The table (memories or facts) is composed in with psycopg.sql.Identifier.
--   %(delta)s    real  +5 helpful, -10 unhelpful
--   %(helpful)s  bool
--   %(tenant)s   text  the tenant
--   %(id)s       uuid  the memory or fact
UPDATE {table}
   SET importance = least(100, greatest(0, importance + %(delta)s)),
       dormant_at = CASE WHEN %(helpful)s THEN NULL ELSE dormant_at END
 WHERE tenant_id = %(tenant)s AND id = %(id)s
RETURNING importance

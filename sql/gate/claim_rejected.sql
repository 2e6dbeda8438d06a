-- Admitting a rejected note (app/services/gate/decisions.py, _claim): the decision's
-- row, locked until the transaction clears its rejected_text, so two admissions at
-- the same time cannot both take the text.
--   %(tenant)s    text    the tenant
--   %(decision)s  bigint  the decision's id
SELECT decision, kind, source, rejected_text
  FROM admission_log
 WHERE tenant_id = %(tenant)s AND id = %(decision)s
   FOR UPDATE

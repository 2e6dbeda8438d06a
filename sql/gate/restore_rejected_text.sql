-- Admitting a rejected note (app/services/gate/decisions.py, admit) failed in its
-- commit: the text claimed is put back, so the note can be admitted again.
--   %(tenant)s    text    the tenant
--   %(decision)s  bigint  the rejected decision's id
--   %(text)s      text    the text claimed from it
UPDATE admission_log
   SET rejected_text = %(text)s
 WHERE tenant_id = %(tenant)s AND id = %(decision)s AND rejected_text IS NULL

-- Store: the version that replaced a superseded one. Parameters: tenant, older, newer.
UPDATE memories
   SET superseded_by = %(newer)s
 WHERE tenant_id = %(tenant)s AND id = %(older)s

-- Admitting a rejected note (app/services/gate/decisions.py, admit): the decision the
-- commit just logged for it (forced, or duplicate when the text had been stored since)
-- says which rejected decision it admits, and who did, ahead of its own reason.
--   %(tenant)s    text    the tenant
--   %(memory)s    uuid    the memory the commit stored or matched
--   %(decision)s  bigint  the rejected decision admitted (the new row comes after it)
--   %(note)s      text    'admitted from rejected decision N[ by key K]; '
UPDATE admission_log
   SET reason = %(note)s || reason
 WHERE tenant_id = %(tenant)s
   AND id = (SELECT id
               FROM admission_log
              WHERE tenant_id = %(tenant)s
                AND memory_id = %(memory)s
                AND id > %(decision)s
                AND decision IN ('forced', 'duplicate')
              ORDER BY id DESC
              LIMIT 1)
RETURNING id

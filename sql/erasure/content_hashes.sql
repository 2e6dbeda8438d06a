-- Erasure (app/services/access/erasure/rows.py): the content hashes of the memories that
-- go, read before they go: the gate's decisions on the same content go with them
-- (sql/erasure/delete_admission_log.sql).
-- Parameters: tenant; memories (uuid[]).
SELECT content_hash
  FROM memories
 WHERE tenant_id = %(tenant)s AND id = ANY(%(memories)s::uuid[])

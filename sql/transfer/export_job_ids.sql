-- Export (app/services/transfer/export.py, _rows): a job's payload with each uuid string at
-- its top level (memory_id, conversation_id) that names no conversation, memory or fact
-- of the tenant any more written as null (a note merged away by deduplication leaves its
-- extraction job naming it): the file then names only rows it holds, and an import writes
-- such an id as null too (sql/transfer/import_job_ids.sql), so a copy exports the same.
-- An expression, not a statement: the code composes in {payload}, the column of the
-- exported row `t`.
-- Parameters: none.
CASE WHEN jsonb_typeof({payload}) = 'object' THEN coalesce((
    SELECT jsonb_object_agg(e.key,
             CASE WHEN jsonb_typeof(e.value) <> 'string'
                       OR e.value #>> '{{}}' !~* '^[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}$'
                  THEN e.value
                  WHEN EXISTS (SELECT 1 FROM memories AS m
                                WHERE m.tenant_id = t.tenant_id
                                  AND m.id = (e.value #>> '{{}}')::uuid)
                    OR EXISTS (SELECT 1 FROM facts AS f
                                WHERE f.tenant_id = t.tenant_id
                                  AND f.id = (e.value #>> '{{}}')::uuid)
                    OR EXISTS (SELECT 1 FROM conversations AS c
                                WHERE c.tenant_id = t.tenant_id
                                  AND c.id = (e.value #>> '{{}}')::uuid)
                  THEN e.value
                  ELSE 'null'::jsonb END)
      FROM jsonb_each({payload}) AS e), '{{}}'::jsonb)
ELSE {payload} END

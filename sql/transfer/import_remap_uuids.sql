-- Import with new ids (app/services/transfer/importer.py, _value): a jsonb column's
-- value with every uuid string at the top level of an object (a job's memory_id,
-- conversation_id) replaced by its new uuid; any other value as it is. An expression,
-- not a statement: the code composes in {value}, the column of the file's row `r`.
-- Parameters: none.
CASE WHEN jsonb_typeof({value}) = 'object' THEN coalesce((
    SELECT jsonb_object_agg(e.key, CASE WHEN m.new IS NULL THEN e.value
                                        ELSE to_jsonb(m.new::text) END)
      FROM jsonb_each({value}) AS e
      LEFT JOIN elephant_import_ids AS m
        ON jsonb_typeof(e.value) = 'string' AND m.old = e.value #>> '{{}}'), '{{}}'::jsonb)
ELSE {value} END

-- Import (app/services/transfer/importer.py, _value): a job's payload with each uuid string
-- at its top level (memory_id, conversation_id) as the import writes it: with new ids the
-- new id of the row it names; the same id when ids are kept; and null when it names no
-- conversation, memory or fact of the file. The database does not keep job payloads in
-- step with the rows (a note merged away by deduplication leaves its extraction job
-- naming it), so such an id named nothing in the source tenant either: written as null,
-- it cannot name another tenant's row here (app/services/transfer/references.py). Any
-- other value as it is. An expression, not a statement: the code composes in {value},
-- the payload of the file's row `r`; elephant_import_ids is empty when ids are kept.
-- Parameters: none.
CASE WHEN jsonb_typeof({value}) = 'object' THEN coalesce((
    SELECT jsonb_object_agg(e.key,
             CASE WHEN jsonb_typeof(e.value) <> 'string'
                       OR e.value #>> '{{}}' !~* '^[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}$'
                  THEN e.value
                  WHEN NOT EXISTS (SELECT 1 FROM elephant_import_keys AS k
                                    WHERE k.key = e.value #>> '{{}}'
                                      AND k.section IN ('conversations', 'memories', 'facts'))
                  THEN 'null'::jsonb
                  ELSE coalesce((SELECT to_jsonb(m.new::text) FROM elephant_import_ids AS m
                                  WHERE m.old = e.value #>> '{{}}'), e.value) END)
      FROM jsonb_each({value}) AS e), '{{}}'::jsonb)
ELSE {value} END

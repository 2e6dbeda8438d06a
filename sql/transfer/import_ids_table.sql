-- Import with new ids (app/services/transfer/importer.py, _map_ids): the temporary map
-- of every uuid key in the file (as text) to its new uuid, gone at commit.
-- Parameters: none.
CREATE TEMPORARY TABLE elephant_import_ids (
    old text PRIMARY KEY,
    new uuid NOT NULL DEFAULT gen_random_uuid()
) ON COMMIT DROP

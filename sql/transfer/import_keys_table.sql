-- Import (app/services/transfer/references.py): the temporary table of every row key the
-- file brings, by section (a uuid or a row number of a table, an entity's key of the
-- graph), as the file writes it: what a reference in the file may point at. Gone at
-- commit.
-- Parameters: none.
CREATE TEMPORARY TABLE elephant_import_keys (
    section text NOT NULL,
    key     text NOT NULL,
    PRIMARY KEY (section, key)
) ON COMMIT DROP

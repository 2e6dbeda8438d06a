-- Import (app/services/transfer/importer.py, _stage): the temporary table every row
-- line of the file is copied into (line number, the line as jsonb), gone at commit.
-- Parameters: none.
CREATE TEMPORARY TABLE elephant_import_rows (n bigint PRIMARY KEY, line jsonb NOT NULL)
    ON COMMIT DROP

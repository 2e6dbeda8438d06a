-- Import (app/services/transfer/importer.py, _embed): the temporary table of vectors
-- made here for rows of the file (by line number), read when the rows are inserted;
-- gone at commit.
-- Parameters: none.
CREATE TEMPORARY TABLE IF NOT EXISTS elephant_import_vectors (
    n bigint PRIMARY KEY,
    embedding vector NOT NULL
) ON COMMIT DROP

-- Import with new ids (app/services/transfer/importer.py, _map_ids): the new uuids in the
-- order of the old ones. Search breaks exact ties by id (the lanes' row_number() ... ORDER
-- BY distance, id; the fused ORDER BY score, id), so a copy whose ids sorted otherwise
-- would rank tied rows otherwise. Each new id is one random prefix of this import (the
-- first 20 hex digits of a version-4 uuid: 74 random bits) and the old id's rank in 12
-- hex digits: unique, a valid version-4 uuid, and ordered as the old ids are.
-- Parameters: none.
WITH prefix AS (SELECT left(gen_random_uuid()::text, 24) AS p),
     ranked AS (SELECT old, row_number() OVER (ORDER BY old::uuid) AS r
                  FROM elephant_import_ids)
UPDATE elephant_import_ids AS m
   SET new = (prefix.p || lpad(to_hex(ranked.r), 12, '0'))::uuid
  FROM ranked, prefix
 WHERE ranked.old = m.old

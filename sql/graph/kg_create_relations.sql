-- Relational graph store (app/services/graph/relational.py, create_relations): a batch
-- of relations in one statement, one array per column. A current relation that exists
-- already is skipped (one current row per triple, whatever the concurrency); a closed one
-- is always added (history).
-- Parameters, in order: tenant; then the arrays source_key, relation_type, target_key
-- (text[]), valid_from, valid_to, recorded_at (timestamptz[]), epistemic, source
-- (text[]) and properties (jsonb[]: the properties kept in no column).
INSERT INTO kg_relations (tenant_id, source_key, relation_type, target_key, valid_from,
                          valid_to, recorded_at, epistemic, source, properties)
SELECT %s, *
  FROM unnest(%s::text[], %s::text[], %s::text[], %s::timestamptz[], %s::timestamptz[],
              %s::timestamptz[], %s::text[], %s::text[], %s::jsonb[])
    ON CONFLICT (tenant_id, source_key, relation_type, target_key)
 WHERE valid_to IS NULL DO NOTHING

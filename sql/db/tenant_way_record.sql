-- How a tenant's vector lanes are served, upserted after each count (app/db/tenant_indexes.py,
-- _record). indexed_at is kept while the way stays own and no new build ran, cleared
-- when the tenant leaves own; build_seconds is kept from the last build while own.
-- Parameters (named): tenant, way (exact, shared or own), rows (its vectors), indexed
-- (boolean: an index was built now), seconds (the build's time, or NULL).
INSERT INTO tenant_vector_ways AS w (tenant_id, way, vector_rows, counted_at,
                                     indexed_at, build_seconds)
VALUES (%(tenant)s, %(way)s, %(rows)s, now(),
        CASE WHEN %(indexed)s THEN now() END, %(seconds)s)
ON CONFLICT (tenant_id) DO UPDATE
   SET way = excluded.way,
       vector_rows = excluded.vector_rows,
       counted_at = excluded.counted_at,
       indexed_at = CASE WHEN excluded.way <> 'own' THEN NULL
                         WHEN %(indexed)s THEN excluded.indexed_at ELSE w.indexed_at END,
       build_seconds = coalesce(excluded.build_seconds,
                                CASE WHEN excluded.way = 'own' THEN w.build_seconds END)

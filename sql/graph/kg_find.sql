-- Relational graph store (app/services/graph/relational.py, find): the entities whose key
-- holds the text or is held in it, optionally of one domain and role. A scan of the
-- tenant's keys (index-only on the primary key): no trigram index is needed, and managed
-- services need not offer pg_trgm. The code keeps the whole-word matches.
-- Parameters: t (tenant), q (the text), domain and role (null for any).
SELECT key, name, role, domain, epistemic, source, created_at, updated_at, valid_from,
       valid_to
  FROM kg_entities
 WHERE tenant_id = %(t)s
   AND key IN (SELECT k.key FROM kg_entities AS k
                WHERE k.tenant_id = %(t)s
                  AND (strpos(k.key, %(q)s) > 0 OR strpos(%(q)s, k.key) > 0))
   AND (%(domain)s::text IS NULL OR domain = %(domain)s)
   AND (%(role)s::text IS NULL OR role = %(role)s)
 ORDER BY key

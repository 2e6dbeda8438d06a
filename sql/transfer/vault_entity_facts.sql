-- Vault export (app/services/transfer/vault.py): the facts linked to a page of entities
-- (about them or naming them), by entity, earliest validity first.
-- Parameters, in order: tenant, entity keys (text[]).
SELECT fe.entity_key, fe.link, f.text, f.observation_kind, f.status, f.valid_from,
       f.valid_to, f.recorded_at, f.expired_at, f.conversation_id
FROM fact_entities AS fe JOIN facts AS f ON f.tenant_id = fe.tenant_id AND f.id = fe.fact_id
WHERE fe.tenant_id = %s AND fe.entity_key = ANY(%s)
ORDER BY fe.entity_key, f.valid_from NULLS FIRST, f.recorded_at, f.id

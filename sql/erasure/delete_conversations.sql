-- Erasure (app/services/access/erasure/rows.py), step 13 of 13: the conversations that
-- go (asked for, of the source, or left without turns by a subject erasure), last: every
-- other row references them.
-- Parameters: tenant; convs (uuid[]).
DELETE FROM conversations
 WHERE tenant_id = %(tenant)s AND id = ANY(%(convs)s::uuid[])

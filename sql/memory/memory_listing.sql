-- Fragment: which memories GET /memories lists (app/services/memory/records.py), one
-- filter for the page and its total; a conversation is named by either id. Spliced in
-- after a WHERE where a line holds only {memory_listing}.
--   tenant; kind, source, conversation (text) and conversation_uuid (uuid): NULL = off
m.tenant_id = %(tenant)s
AND (%(kind)s::text IS NULL OR m.kind = %(kind)s)
AND (%(source)s::text IS NULL OR m.source = %(source)s)
AND (%(conversation)s::text IS NULL OR c.external_id = %(conversation)s
     OR m.conversation_id = %(conversation_uuid)s)

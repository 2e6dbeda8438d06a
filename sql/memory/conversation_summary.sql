-- Fragment: the columns of a conversation's summary (app/services/memory/transcripts.py,
-- _summary reads them in this order): its own, its turns and windows counted, its
-- speakers by first turn, its first and last turn's time, its project. Spliced in where
-- a line holds only {conversation_summary}; the conversation is ``c``.
c.id, c.external_id, c.source, c.session_date, c.created_at,
(SELECT count(*) FROM turns AS t
  WHERE t.tenant_id = c.tenant_id AND t.conversation_id = c.id)::int,
(SELECT count(*) FROM memories AS m
  WHERE m.tenant_id = c.tenant_id AND m.conversation_id = c.id AND m.kind = 'window')::int,
coalesce((SELECT array_agg(s.speaker ORDER BY s.first) FROM
          (SELECT t.speaker, min(t.seq) AS first FROM turns AS t
            WHERE t.tenant_id = c.tenant_id AND t.conversation_id = c.id
            GROUP BY t.speaker) AS s), '{}'),
(SELECT min(coalesce(t.occurred_at, t.created_at)) FROM turns AS t
  WHERE t.tenant_id = c.tenant_id AND t.conversation_id = c.id),
(SELECT max(coalesce(t.occurred_at, t.created_at)) FROM turns AS t
  WHERE t.tenant_id = c.tenant_id AND t.conversation_id = c.id),
c.metadata ->> 'project'

-- Closing a session (app/services/memory/sessions.py, close_session): the handoff it
-- leaves for the next session of the project.
--   %(tenant)s, %(project)s text; %(conversation)s uuid (the session stored);
--   %(summary)s text; %(decisions)s, %(open_questions)s, %(next_steps)s jsonb (lists of
--   text); %(generator)s text (the LLM, or offline); %(metadata)s jsonb
INSERT INTO handoffs (tenant_id, project, conversation_id, summary, decisions,
                      open_questions, next_steps, generator, metadata)
VALUES (%(tenant)s, %(project)s, %(conversation)s, %(summary)s, %(decisions)s,
        %(open_questions)s, %(next_steps)s, %(generator)s, %(metadata)s)
RETURNING id, created_at

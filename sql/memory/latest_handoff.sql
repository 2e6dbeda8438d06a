-- The latest handoff of a project (app/services/memory/sessions.py, GET /handoff).
--   %(tenant)s   text  the tenant
--   %(project)s  text  the project
SELECT id, project, created_at, conversation_id, summary, decisions, open_questions,
       next_steps, generator
  FROM handoffs
 WHERE tenant_id = %(tenant)s AND project = %(project)s
 ORDER BY created_at DESC, id DESC
 LIMIT 1

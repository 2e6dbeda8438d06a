-- Fragment: the columns of a session handoff, in the order
-- app/services/memory/transcripts.py (_handoff) reads them. Spliced in where a line
-- holds only {handoff_columns}.
id, project, conversation_id, created_at, summary, decisions, open_questions,
next_steps, generator

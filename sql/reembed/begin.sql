-- The state row of a re-embed that starts now (app/services/ops/reembed/phases.py):
-- the target model as JSON, the model and dimension it replaces, the first phase, and
-- the vector indexes to build again on embedding_next (JSON list). Parameters, in
-- order: target, from_model, from_dim, indexes.
INSERT INTO elephant_reembed (target, from_model, from_dim, phase, indexes)
VALUES (%s, %s, %s, 'backfill', %s)

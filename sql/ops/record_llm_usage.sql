-- One LLM call, so cost is auditable per tenant and operation (app/services/ops/usage.py,
-- record_usage); read back by llm_usage.sql (the console overview, GET /usage).
-- Parameters (positional, in order): tenant, operation, provider, model, tokens_in,
-- tokens_out, latency_ms, attempts, ok (boolean), error (text or NULL).
INSERT INTO llm_usage (tenant_id, operation, provider, model, tokens_in, tokens_out,
                       latency_ms, attempts, ok, error)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)

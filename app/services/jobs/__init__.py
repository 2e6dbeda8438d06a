"""The Postgres work queue: enqueue in the writer's transaction, claim with SKIP LOCKED,
lease while running, and the background worker that drains it.
"""

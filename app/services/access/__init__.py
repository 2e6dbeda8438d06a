"""Who may do what: API keys and principals, console sessions, per-tenant settings, the
audit log, and erasure.
"""

"""Running Elephant: health, doctor, metrics, stats, the tenant overview, LLM usage, the
CLI's link to a server, and re-embedding to a new model.
"""

"""Finding what was remembered: hybrid search (query variants, one fused SQL statement,
diversity), proactive recall, reflect, and the uses a read records aside.
"""

"""The A-MAC admission gate: is a text worth keeping (relevance, novelty, specificity), its
offline scoring, and the trail of its decisions.
"""

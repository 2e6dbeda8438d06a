"""What is remembered: notes and conversations committed (windows, passages, dedup), read
back as records and transcripts, closed as sessions, bulk-ingested, and rated by
feedback.
"""

"""Fact extraction: atomic, dated, attributed statements from notes and conversations."""

"""One module per LLM task: its version, its prompt builder and its typed response."""

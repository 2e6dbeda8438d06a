"""The key-value store of agent memories (LangGraph BaseStore semantics) over notes."""

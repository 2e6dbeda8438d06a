"""The outside world: embedders, LLMs and the reranker client, each a small protocol."""

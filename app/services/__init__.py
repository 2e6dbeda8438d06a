"""The behaviour of Elephant; the API, MCP adapter and CLI are thin layers over it."""

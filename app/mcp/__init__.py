"""The MCP adapter (fastmcp): memory, session and graph tools over app.services, per profile.

- registry.py: how a tool is declared (its kind sets its profiles and annotations)
- tools.py: the memory and session tools and the handoff resource
- graph_tools.py: the knowledge-graph tools
- server.py: builds the server for a profile; errors.py: errors → MCP errors
- context.py: the runtime and tenant of a tool call; limits.py: per-key rate limits
- http.py: bearer token, exposure rule, the streamable-HTTP app
"""

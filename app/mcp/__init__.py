"""The MCP adapter (fastmcp): memory and session tools over app.services, per profile.

- registry.py: how a tool is declared (its kind sets its profiles and annotations)
- tools.py: the memory and session tools and the handoff resource
- server.py: builds the server for a profile; errors.py: errors → MCP errors
- http.py: bearer token, exposure rule, the streamable-HTTP app
"""

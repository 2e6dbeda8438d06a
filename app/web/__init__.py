"""What every HTTP door (REST API, console, MCP over HTTP) shares: rate limits, bearer
tokens, route access.
"""

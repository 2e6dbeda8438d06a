"""What every HTTP door (REST API, console, MCP over HTTP) shares: the access middleware
(access.py) and what routes declare to it (route_access.py), bearer tokens (bearer.py),
allowed Host headers (hosts.py), the console's session cookie and CSRF token
(cookies.py), rate limits (ratelimit.py).
"""

"""Per-key budgets for MCP tool calls over HTTP: the REST limits (auth.rate_*), by tool scope."""

from __future__ import annotations

import logging

import mcp_types as mt
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult

from app.config import AuthSettings
from app.errors import RateLimited
from app.mcp.errors import message_for
from app.web.ratelimit import RateLimiter, per_minute


class KeyRateLimits(Middleware):
    def __init__(self, auth: AuthSettings, scope_of_tool: dict[str, str]) -> None:
        self.auth = auth
        self.scope_of_tool = scope_of_tool
        self.limiter = RateLimiter()

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        token = get_access_token()
        scope = self.scope_of_tool.get(context.message.name)
        if token is not None and scope is not None:
            try:
                self.limiter.take(token.client_id, scope, per_minute(self.auth, scope))
            except RateLimited as exc:
                raise ToolError(message_for(exc), log_level=logging.INFO) from exc
        return await call_next(context)

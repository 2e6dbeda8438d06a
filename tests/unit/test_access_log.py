"""The access line of an app that is not Litestar (`elephant mcp --http`): the route, the
status and the time, never the path as sent or its query string unless log.access_detail."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from app.web.access_log import ACCESS_LOGGER, AccessLog


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    status = 200 if scope["path"] == "/mcp" else 404
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _request(app: AccessLog, path: str, query: bytes) -> None:
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "client": ("10.0.0.7", 51234),
        "headers": [],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_: Any) -> None:
        return None

    asyncio.run(app(scope, receive, send))


@pytest.mark.parametrize("detail", [False, True], ids=["default", "detail"])
def test_access_lines_name_the_route_not_the_url(
    caplog: pytest.LogCaptureFixture, detail: bool
) -> None:
    app = AccessLog(_answer, frozenset({"/mcp"}), detail=detail)
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        _request(app, "/mcp", b"name=Ines+Duarte")
        _request(app, "/Ines-Duarte", b"")
    first, second = (r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER)
    assert first.startswith("POST /mcp 200 ") and first.split()[3].endswith("ms"), first
    assert second.startswith("POST unmatched 404 "), second
    if detail:
        assert "(sent: /mcp?name=Ines+Duarte from 10.0.0.7:51234)" in first, first
        assert "/Ines-Duarte" in second
    else:
        assert "Ines" not in first + second and "10.0.0.7" not in first + second

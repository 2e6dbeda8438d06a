"""The API's MCP mount builds its server at the first request, not with the app
(app/api/mcp.py): a server answering only REST never imports fastmcp."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from app.api.mcp import LazyMCP


class FakeMCP:
    """What the mount needs of fastmcp's app: a lifespan, and an ASGI app to call."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    @asynccontextmanager
    async def lifespan(self, _app: Any) -> AsyncIterator[None]:
        self.events.append("session manager started")
        yield
        self.events.append("session manager stopped")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.events.append("request")


def lazy(events: list[str], *, fail: bool = False) -> LazyMCP:
    def build() -> tuple[Any, Any]:
        events.append("built")
        if fail:
            raise RuntimeError("no MCP here")
        mcp = FakeMCP(events)
        return mcp, mcp

    return LazyMCP(build)


def test_nothing_is_built_without_a_request() -> None:
    events: list[str] = []
    mount = lazy(events)

    async def main() -> None:
        async with mount.running():
            await asyncio.sleep(0)

    asyncio.run(main())
    assert events == []


def test_the_first_request_builds_once_and_the_session_manager_runs_until_shutdown() -> None:
    events: list[str] = []
    mount = lazy(events)

    async def main() -> None:
        async with mount.running():
            apps: list[Any] = await asyncio.gather(mount.app(), mount.app())
            assert apps[0] is apps[1]
            await apps[0]({}, None, None)
            assert events == ["built", "session manager started", "request"]

    asyncio.run(main())
    assert events == ["built", "session manager started", "request", "session manager stopped"]


def test_a_failed_build_refuses_each_request_and_shutdown_still_ends() -> None:
    events: list[str] = []
    mount = lazy(events, fail=True)

    async def main() -> None:
        async with mount.running():
            for _ in range(2):
                with pytest.raises(RuntimeError, match="could not be built"):
                    await mount.app()

    asyncio.run(main())
    assert events == ["built"]


def test_outside_the_lifespan_the_mount_refuses() -> None:
    with pytest.raises(RuntimeError, match="lifespan"):
        asyncio.run(lazy([]).app())

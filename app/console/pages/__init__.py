"""The console's pages, one module each; app/console/__init__.py mounts them at /ui."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

from app.console.pages.conversations import ConversationPages
from app.console.pages.erase import ErasePages
from app.console.pages.gate import GatePages
from app.console.pages.graph import GraphPages
from app.console.pages.overview import OverviewPages
from app.console.pages.records import RecordPages
from app.console.pages.search import SearchPages
from app.console.pages.signin import SignInPages

PAGES: list[ControllerRouterHandler] = [
    SignInPages,
    OverviewPages,
    SearchPages,
    RecordPages,
    GatePages,
    GraphPages,
    ConversationPages,
    ErasePages,
]

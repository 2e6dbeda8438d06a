"""The Litestar application factory."""

from __future__ import annotations

from litestar import Litestar
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig

from app import __version__
from app.api.errors import EXCEPTION_HANDLERS
from app.api.health import HealthController
from app.api.memory import MemoryController
from app.api.search import SearchController
from app.config import Settings
from app.db import Database
from app.services.runtime import Elephant


def create_app(settings: Settings, elephant: Elephant | None = None) -> Litestar:
    """Build the app. Given an ``elephant`` the caller owns it; otherwise the app opens one
    at start-up (with the in-process worker when worker.enabled) and closes it at shutdown."""
    holder: dict[str, Elephant] = {}
    if elephant is not None:
        holder["elephant"] = elephant

    def startup() -> None:
        if "elephant" not in holder:
            opened = Elephant.open(settings)
            if settings.worker.enabled:
                opened.start_worker()
            holder["elephant"] = opened
            holder["owned"] = opened

    def shutdown() -> None:
        owned = holder.pop("owned", None)
        if owned is not None:
            owned.close()

    def provide_elephant() -> Elephant:
        return holder["elephant"]

    def provide_db() -> Database:
        return holder["elephant"].db

    return Litestar(
        route_handlers=[HealthController, MemoryController, SearchController],
        dependencies={
            "elephant": Provide(provide_elephant, sync_to_thread=False),
            "db": Provide(provide_db, sync_to_thread=False),
        },
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        on_startup=[startup],
        on_shutdown=[shutdown],
        openapi_config=OpenAPIConfig(title="Elephant", version=__version__, path="/schema"),
        debug=False,
    )

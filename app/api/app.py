"""The Litestar application factory."""

from __future__ import annotations

from litestar import Litestar
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig

from app import __version__
from app.api.errors import EXCEPTION_HANDLERS
from app.api.health import HealthController
from app.config import Settings
from app.db import Database


def create_app(settings: Settings, db: Database | None = None) -> Litestar:
    """Build the app. Given a ``db`` the caller owns it; otherwise the app opens and closes one."""
    database = db or Database(settings)
    owned = db is None

    def startup() -> None:
        if owned:
            database.open()

    def shutdown() -> None:
        if owned:
            database.close()

    return Litestar(
        route_handlers=[HealthController],
        dependencies={"db": Provide(lambda: database, sync_to_thread=False)},
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        on_startup=[startup],
        on_shutdown=[shutdown],
        openapi_config=OpenAPIConfig(title="Elephant", version=__version__, path="/schema"),
        debug=False,
    )

"""HTTP API (Litestar): thin controllers over app.services."""

from app.api.app import create_app

__all__ = ["create_app"]

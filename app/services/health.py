"""Health: is the database reachable, what it runs, and does the schema fit this build."""

from __future__ import annotations

import time
from typing import Any

from app import __version__
from app.db import Database
from app.errors import ElephantError


def health(db: Database) -> dict[str, Any]:
    """A report for operators; ``status`` is ok, degraded (schema/model drift) or unavailable."""
    settings = db.settings
    report: dict[str, Any] = {
        "status": "ok",
        "version": __version__,
        "database": {"mode": db.mode, "reachable": False},
        "embedding": {
            "provider": settings.embedding.provider,
            "model": settings.embedding.model,
            "dim": settings.embedding.dim,
        },
    }
    started = time.perf_counter()
    try:
        with db.connection() as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'), current_database(), current_user"
            ).fetchone()
            assert row is not None
            schema = db.schema_info(conn)
            conn.rollback()
    except ElephantError as exc:
        report["status"] = "unavailable"
        report["database"]["error"] = exc.message
        return report
    capabilities = db.capabilities
    report["database"].update(
        reachable=True,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
        server_version=row[0],
        database=row[1],
        role=row[2],
        extensions=capabilities.report() if capabilities else {},
        keyword_search="bm25" if capabilities and capabilities.textsearch else "tsvector",
        graph="age" if capabilities and capabilities.age else "unavailable",
    )
    report["schema"] = {
        "revision": schema.revision,
        "head": schema.head,
        "up_to_date": schema.up_to_date,
    }
    report["embedding"].update(db_model=schema.embedding_model, db_dim=schema.embedding_dim)
    mismatched = schema.embedding_dim != settings.embedding.dim
    report["embedding"]["dim_matches"] = not mismatched
    if mismatched or not schema.up_to_date:
        report["status"] = "degraded"
    return report

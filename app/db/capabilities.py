"""What the connected Postgres can do: server version and extensions."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from app.db.resources import load_sql
from app.errors import CapabilityMissing

MIN_SERVER_VERSION = 150000
OPTIONAL_EXTENSIONS = ("age", "pg_textsearch", "vectorscale")
# Those database.optional_extensions decides on: without both, the managed-Postgres mode
# (pgvector only, as on RDS, Cloud SQL, Supabase, Neon).
CONFIGURABLE = ("age", "pg_textsearch")
NOT_WANTED = "not created: database.optional_extensions leaves it out (managed-Postgres mode)"


@dataclass(frozen=True)
class Capabilities:
    server_version: str
    server_version_num: int
    installed: dict[str, str] = field(default_factory=dict)
    available: dict[str, str] = field(default_factory=dict)
    preloaded: tuple[str, ...] = ()

    @property
    def pgvector(self) -> bool:
        return "vector" in self.installed

    @property
    def age(self) -> bool:
        return "age" in self.installed

    @property
    def textsearch(self) -> bool:
        """True BM25 (pg_textsearch) is usable; otherwise the keyword lane uses tsvector."""
        return "pg_textsearch" in self.installed

    def report(self, wanted: tuple[str, ...] | None = None) -> dict[str, object]:
        """Per extension: installed version, or why it is not in use. ``wanted``: the
        optional extensions the migrations were asked to create (database.optional_extensions);
        one left out is absent by choice (the managed-Postgres mode), not for want of rights."""
        report: dict[str, object] = {}
        for name in ("vector", *OPTIONAL_EXTENSIONS):
            if name in self.installed:
                report[name] = {"installed": True, "version": self.installed[name]}
            elif wanted is not None and name in CONFIGURABLE and name not in wanted:
                left_out: dict[str, object] = {"installed": False, "note": NOT_WANTED}
                if name in self.available:
                    left_out["available_version"] = self.available[name]
                report[name] = left_out
            elif name in self.available:
                report[name] = {
                    "installed": False,
                    "available_version": self.available[name],
                    "note": _why_not_installed(name, self.preloaded),
                }
            else:
                report[name] = {"installed": False, "note": "not available on this server"}
        return report

    @property
    def managed(self) -> bool:
        """Neither AGE nor pg_textsearch: the app runs as on a managed Postgres service
        (keyword lane on tsvector; the graph, if any, without AGE)."""
        return not (self.age or self.textsearch)

    def require_pgvector(self) -> None:
        if self.server_version_num < MIN_SERVER_VERSION:
            raise CapabilityMissing(
                f"Postgres {self.server_version} is too old: Elephant needs PostgreSQL 15 or newer"
            )
        if "vector" not in self.installed and "vector" not in self.available:
            raise CapabilityMissing(
                "the pgvector extension is not installed on this Postgres server. Install it "
                "(Debian/Ubuntu: apt install postgresql-<major>-pgvector; others: "
                "https://github.com/pgvector/pgvector#installation) and run `elephant migrate` "
                "again, or unset DATABASE_URL to use the embedded server, which includes it."
            )


def _why_not_installed(name: str, preloaded: tuple[str, ...]) -> str:
    if name == "pg_textsearch" and name not in preloaded:
        return "add pg_textsearch to shared_preload_libraries, restart, then `elephant migrate`"
    if name == "vectorscale":
        return "available; not used by this version"
    return "available but not created (needs a superuser to run the migrations)"


def detect(conn: psycopg.Connection[tuple[object, ...]]) -> Capabilities:
    row = conn.execute(load_sql("db/server_settings.sql")).fetchone()
    assert row is not None
    installed = conn.execute("SELECT extname, extversion FROM pg_extension").fetchall()
    available = conn.execute("SELECT name, default_version FROM pg_available_extensions").fetchall()
    preloaded = tuple(lib.strip() for lib in str(row[2] or "").split(",") if lib.strip())
    return Capabilities(
        server_version=str(row[0]),
        server_version_num=int(str(row[1])),
        installed={str(name): str(version) for name, version in installed},
        available={str(name): str(version) for name, version in available},
        preloaded=preloaded,
    )

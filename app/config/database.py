"""Where the data lives: an external Postgres (``database``) or the embedded server.

``database`` names the server, the roles tenant queries and jobs run as, the pool, a
transaction pooler in between and streaming read replicas; ``embedded`` sizes and
exposes the PostgreSQL that runs inside Elephant when ``database.url`` is unset.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from app.config.base import _IDENTIFIER, _Section, _split_list


def analyst_group(app_role: str) -> str:
    """The group every SQL analyst role of ``app_role`` is a member of (migration 0015),
    within Postgres' 63 characters."""
    return f"{app_role[:55]}_analyst"


class DatabaseSettings(_Section):
    url: str | None = Field(
        None,
        description="External Postgres (>= 15, with pgvector). Unset: the embedded server. "
        "Also read from DATABASE_URL.",
        json_schema_extra={"secret": True},
    )
    app_role: str = Field(
        "elephant_app",
        description="Role the application runs tenant queries as; row-level security applies "
        "to it. Created by the migrations.",
    )
    worker_role: str = Field(
        "elephant_worker",
        description="Role the job worker claims jobs as (the only role allowed to); it then runs "
        "each job as the app role inside the job's tenant. Created by the migrations.",
    )
    pooler: Literal["none", "transaction"] = Field(
        "none",
        description="What sits between the app and Postgres. transaction: a transaction "
        "pooler (PgBouncer pool_mode = transaction, RDS Proxy, Supavisor): the app and the "
        "worker log in through app_url and worker_url as their roles, and every transaction "
        "sets its own statement timeout and time zone, since no session state survives a "
        "transaction. database.url stays a direct connection (migrations, locks, LISTEN).",
    )
    app_url: str | None = Field(
        None,
        description="Where the app role logs in as itself (no SET ROLE): the login must be "
        "database.app_role, neither superuser nor BYPASSRLS, or the app refuses to start. "
        "Required with pooler = transaction (the pooler's address). Unset: the embedded "
        "socket, or database.url with SET ROLE.",
        json_schema_extra={"secret": True},
    )
    worker_url: str | None = Field(
        None,
        description="Where the worker role logs in as itself, as app_url for the app role "
        "(its login must be database.worker_role). Required with pooler = transaction.",
        json_schema_extra={"secret": True},
    )
    prepared_statements: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Server-side prepared statements on the app and worker connections "
        "(psycopg's after 5 runs, the search statement at once). auto: off with pooler = "
        "transaction (PgBouncer before 1.21 cannot route them), else on. on behind "
        "PgBouncer >= 1.21 with max_prepared_statements > 0.",
    )
    auto_migrate: bool = Field(True, description="Upgrade the schema to head at start.")
    pool_min_size: int = Field(1, ge=0, le=100, description="Connections kept open.")
    pool_max_size: int = Field(10, ge=1, le=500, description="Upper bound of the pool.")
    connect_timeout_s: float = Field(10.0, gt=0, description="Seconds to wait for a connection.")
    statement_timeout_ms: int = Field(
        30000, ge=0, description="Server-side limit per statement (0 = none)."
    )
    lock_timeout_ms: int = Field(
        3000,
        ge=1,
        le=600000,
        description="Longest wait of the app's own statements for a lock another session "
        "holds (a request then answers 503 with Retry-After; a migration at start fails "
        "naming the holder). Never 0: an outside session must not stall the server.",
    )
    optional_extensions: tuple[str, ...] = Field(
        ("age", "pg_textsearch"),
        description="Optional extensions the migrations create when the server has them "
        "(comma-separated in the env, 'none' for none). Empty: the managed-Postgres mode "
        "(pgvector only), as on a service without AGE or pg_textsearch.",
    )
    replica_urls: tuple[str, ...] = Field(
        (),
        description="Streaming read replicas (postgresql:// URLs, comma-separated in the env): "
        "searches and other reads go to one of them, round robin, falling back to the primary.",
        json_schema_extra={"secret": True},
    )
    replica_max_lag_s: float = Field(
        30.0,
        gt=0,
        le=86400,
        description="A replica whose replay is further behind the primary than this "
        "(seconds) is skipped until it catches up.",
    )
    replica_check_s: float = Field(
        5.0,
        ge=0,
        le=3600,
        description="Seconds between health checks (still a standby, replay lag) of a replica "
        "in use; 0: before every read.",
    )
    replica_retry_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="Seconds before an unhealthy replica is tried again (doubling while it "
        "keeps failing, up to 8x); meanwhile its reads go to the other replicas or the primary.",
    )
    replica_timeout_s: float = Field(
        2.0,
        gt=0,
        le=60,
        description="Seconds a read waits for a replica connection before it goes to another "
        "replica or the primary.",
    )

    @field_validator("url")
    @classmethod
    def _url_scheme(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        assert value is not None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must start with postgresql:// (e.g. postgresql://user:pw@host/db)")
        return value

    @field_validator("app_url", "worker_url")
    @classmethod
    def _role_url_scheme(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        assert value is not None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must start with postgresql:// (e.g. postgresql://role:pw@host/db)")
        return value

    @field_validator("optional_extensions", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return () if value == "none" else _split_list(value)

    @field_validator("replica_urls", mode="before")
    @classmethod
    def _split_urls(cls, value: Any) -> Any:
        """Comma-separated in the env; case kept (passwords)."""
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("optional_extensions")
    @classmethod
    def _known_extensions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - {"age", "pg_textsearch"})
        if unknown:
            raise ValueError(f"unknown optional extension(s) {unknown}: use age, pg_textsearch")
        return value

    @field_validator("replica_urls")
    @classmethod
    def _replica_schemes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for url in value:
            if not url.startswith(("postgresql://", "postgres://")):
                raise ValueError("each replica URL must start with postgresql://")
        return value

    @field_validator("app_role", "worker_role")
    @classmethod
    def _role_name(cls, value: str) -> str:
        if not _IDENTIFIER.match(value):
            raise ValueError("must be a lower-case SQL identifier (letters, digits, _)")
        return value

    @field_validator("pool_max_size")
    @classmethod
    def _pool_bounds(cls, value: int, info: Any) -> int:
        minimum = info.data.get("pool_min_size", 1)
        if value < minimum:
            raise ValueError(f"must be >= pool_min_size ({minimum})")
        return value

    @model_validator(mode="after")
    def _pooler_logins(self) -> DatabaseSettings:
        """Behind a transaction pooler a SET ROLE would not outlive its transaction: the
        roles must log in themselves, so both URLs are needed."""
        if self.pooler == "transaction":
            missing = [name for name in ("app_url", "worker_url") if getattr(self, name) is None]
            if missing:
                raise ValueError(
                    f"pooler = transaction needs {' and '.join(missing)}: URLs through the "
                    f"pooler that log in as {self.app_role} and {self.worker_role} (no SET "
                    "ROLE survives a transaction there)"
                )
        return self

    @property
    def transaction_pooled(self) -> bool:
        """Nothing may be kept in a session between transactions."""
        return self.pooler == "transaction"

    @property
    def analyst_group(self) -> str:
        """The group every SQL analyst role is a member of (migration 0015)."""
        return analyst_group(self.app_role)

    @property
    def prepares(self) -> bool:
        """Whether connections may prepare statements on the server."""
        if self.prepared_statements == "auto":
            return not self.transaction_pooled
        return self.prepared_statements == "on"


class EmbeddedSettings(_Section):
    database: str = Field("elephant", description="Database created inside the embedded server.")
    port: int = Field(
        5432,
        ge=1024,
        le=65535,
        description="Port number of the embedded server (names its unix socket; the TCP port "
        "when tcp is on).",
    )
    tcp: bool = Field(
        False,
        description="Also listen on 127.0.0.1:port. TCP always requires a password "
        "(scram-sha-256).",
    )
    password: str | None = Field(
        None,
        description="Password of the app role over TCP. Unset: generated once and kept in "
        "DATA_DIR/embedded/password (mode 0600).",
        json_schema_extra={"secret": True},
    )
    start_timeout_s: float = Field(60.0, gt=0, description="Seconds to wait for the server.")
    memory_share: float = Field(
        0.25,
        gt=0,
        le=0.8,
        description="Share of the machine's memory (or its cgroup's limit) given to "
        "shared_buffers, held to 128 MB-4 GB (app/db/sizing.py).",
    )
    shared_buffers_mb: int | None = Field(
        None, ge=16, le=1_048_576, description="shared_buffers in MB; unset: memory_share."
    )
    effective_cache_size_mb: int | None = Field(
        None, ge=16, le=4_194_304, description="effective_cache_size in MB; unset: half the memory."
    )
    maintenance_work_mem_mb: int | None = Field(
        None,
        ge=16,
        le=1_048_576,
        description="maintenance_work_mem in MB (index builds); unset: memory / 16, 64 MB-1 GB.",
    )

    @field_validator("database")
    @classmethod
    def _db_name(cls, value: str) -> str:
        if not _IDENTIFIER.match(value):
            raise ValueError("must be a lower-case SQL identifier (letters, digits, _)")
        return value

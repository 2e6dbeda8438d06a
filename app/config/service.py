"""How the process serves: the HTTP server, the job worker, MCP, logs and metrics.

``server`` binds the REST API and says which hosts and origins it answers; ``worker``
drains the job queue; ``mcp`` picks the tool profile and where MCP listens; ``log``
and ``metrics`` shape what the process reports about itself.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from app.config.base import _Section, _split_list, validate_tenant_id


class ServerSettings(_Section):
    host: str = Field("127.0.0.1", description="Address `elephant serve` binds.")
    port: int = Field(7777, ge=1, le=65535, description="Port `elephant serve` binds.")
    allowed_hosts: tuple[str, ...] = Field(
        (),
        description="Host names the API answers to (comma-separated in the env; '*.example.com' "
        "matches subdomains, '*' any). Empty: loopback names plus server.host when it is a "
        "concrete address.",
    )
    cors_origins: tuple[str, ...] = Field(
        (),
        description="Browser origins allowed to call the API cross-site (CORS and the CSRF "
        "check). Empty: none.",
    )
    max_body_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, le=1024**3, description="Largest request body accepted (413)."
    )

    @field_validator("allowed_hosts", "cors_origins", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return _split_list(value)


class WorkerSettings(_Section):
    enabled: bool = Field(
        True, description="Drain the job queue inside `elephant serve` (else: `elephant worker`)."
    )
    poll_interval_s: float = Field(1.0, gt=0, description="Idle wait between queue polls.")
    max_attempts: int = Field(5, ge=1, le=100, description="Tries before a job is marked failed.")
    backoff_s: float = Field(
        2.0, ge=0, description="First retry delay; doubles with every failed attempt."
    )


class McpSettings(_Section):
    profile: Literal["recall", "record", "standard", "full"] = Field(
        "standard",
        description="Tools the MCP server offers: recall (read-only), record (writes, no "
        "deletes), standard (both), full (also deletes).",
    )
    tenant: str | None = Field(
        None,
        description="Tenant of MCP calls over stdio, and over HTTP in auth.mode local without an "
        "X-Elephant-Tenant header (with keys, the key decides). Unset: tenant.default.",
    )
    mount_in_api: bool = Field(True, description="Serve MCP (streamable HTTP) at /mcp in the API.")
    host: str = Field("127.0.0.1", description="Address `elephant mcp --http` binds.")
    port: int = Field(7778, ge=1, le=65535, description="Port `elephant mcp --http` binds.")

    @field_validator("tenant")
    @classmethod
    def _tenant_id(cls, value: str | None) -> str | None:
        return None if value in (None, "") else validate_tenant_id(str(value))


class LogSettings(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level.")
    format: Literal["text", "json"] = Field(
        "text",
        description="Log lines of the app, uvicorn and fastmcp: text (one line each) or json "
        "(one object per line, for a log shipper); both carry the request id.",
    )
    access_detail: bool = Field(
        False,
        description="Debugging only: access lines also carry the path as sent, query string "
        "included, and the client's address (a search text or a name in a URL then stays in "
        "the log after an erasure). Off: method, route template (GET /search, "
        "/memories/{memory_id}), status and milliseconds.",
    )


class MetricsSettings(_Section):
    """The Prometheus /metrics endpoint."""

    enabled: bool = Field(True, description="Serve GET /metrics (Prometheus text format).")
    public: bool = Field(
        False,
        description="Serve /metrics without an API key (for a scraper on a private network); "
        "otherwise it needs a key with the admin scope. It never carries tenant ids.",
    )
    db_timeout_ms: int = Field(
        500,
        ge=10,
        le=10000,
        description="Statement timeout of the queue-depth query a scrape runs; past it (or with "
        "the database down) the scrape leaves the queue gauges out instead of failing.",
    )
    llm_price_in_per_mtok: float = Field(
        0.0,
        ge=0,
        description="USD per million LLM input tokens, for elephant_llm_cost_usd_total "
        "(0: cost not counted).",
    )
    llm_price_out_per_mtok: float = Field(
        0.0, ge=0, description="USD per million LLM output tokens (see llm_price_in_per_mtok)."
    )

"""Settings: a TOML file (``ELEPHANT_CONFIG``) overlaid by ``ELEPHANT_*`` variables.

Built once at start by :func:`load_settings`, never at import. Every key has a
type, a default and a description; the README's reference table is generated
from these models (``elephant config reference``) and a test keeps it in sync.
Environment names are ``ELEPHANT_<SECTION>_<KEY>`` (``ELEPHANT_SERVER_PORT``),
``ELEPHANT_<KEY>`` for top-level keys (``ELEPHANT_DATA_DIR``), and the
conventional ``DATABASE_URL``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from app.errors import ConfigError

CONFIG_ENV = "ELEPHANT_CONFIG"
ENV_PREFIX = "ELEPHANT_"
# Environment names that are not settings keys but are still ours.
# Read by the Python client (elephant_client), never by the server; a shell that exports
# them for the client must still start the server.
_RESERVED_ENV = frozenset({CONFIG_ENV, "ELEPHANT_URL", "ELEPHANT_API_KEY"})
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _split_list(value: Any) -> Any:
    """A comma-separated string (the env) or a list (TOML) as a tuple of lower-case items."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        return tuple(str(part).strip().lower() for part in value)
    return value


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


class AuthSettings(_Section):
    mode: Literal["keys", "local"] = Field(
        "keys",
        description="keys: every REST and MCP-over-HTTP request needs an API key (`elephant keys "
        "create`). local: no keys, only on a loopback address (single-user development).",
    )
    rate_read_per_minute: int = Field(
        1200, ge=0, description="Requests per minute per key for read endpoints (0 = no limit)."
    )
    rate_write_per_minute: int = Field(
        600, ge=0, description="Requests per minute per key for write endpoints (0 = no limit)."
    )
    rate_admin_per_minute: int = Field(
        60, ge=0, description="Requests per minute per key for admin endpoints (0 = no limit)."
    )
    rate_denied_per_minute: int = Field(
        30,
        ge=0,
        description="Failed authentications per minute per client address before 429 "
        "(0 = no limit).",
    )


class EmbeddingSettings(_Section):
    provider: Literal["local", "ollama"] = Field(
        "local", description="Embedder backend: local (transformers, offline) or ollama."
    )
    model: str = Field(
        "all-MiniLM-L6-v2",
        description="local: all-MiniLM-L6-v2 (bundled) or a Hugging Face model directory; "
        "ollama: a model name such as nomic-embed-text.",
    )
    dim: int = Field(
        384,
        ge=1,
        le=16000,
        description="Vector dimension; fixed when the database is initialised.",
    )
    batch_size: int = Field(32, ge=1, le=1024, description="Texts per embedding batch.")
    max_length: int = Field(256, ge=8, le=8192, description="Token limit per text (local).")
    passage_words: int = Field(
        48,
        ge=8,
        le=8192,
        description="Every turn, and a note longer than this, is also embedded in parts of "
        "whole sentences of at most this many words, so nothing past max_length is unseen and "
        "one statement is not drowned by the rest of a long answer.",
    )
    device: str = Field("cpu", description="Torch device for provider local (cpu, cuda, mps).")
    ollama_url: str = Field("http://127.0.0.1:11434", description="Ollama server for ollama.")
    query_prefix: str = Field("", description="Prepended to queries (nomic: 'search_query: ').")
    document_prefix: str = Field(
        "", description="Prepended to stored texts (nomic: 'search_document: ')."
    )
    timeout_s: float = Field(30.0, gt=0, description="Seconds per embedding request (ollama).")


class LLMSettings(_Section):
    provider: Literal["offline", "anthropic", "ollama"] = Field(
        "offline",
        description="offline = deterministic heuristics, no model; anthropic; ollama.",
    )
    model: str = Field(
        "claude-haiku-4-5", description="Model name (anthropic or ollama, e.g. llama3.1)."
    )
    anthropic_api_key: str | None = Field(
        None,
        description="Anthropic key; also read from ANTHROPIC_API_KEY.",
        json_schema_extra={"secret": True},
    )
    anthropic_base_url: str | None = Field(
        None, description="Anthropic API base URL (unset: the SDK default)."
    )
    ollama_url: str = Field("http://127.0.0.1:11434", description="Ollama server.")
    timeout_s: float = Field(30.0, gt=0, description="Seconds per LLM call.")
    max_retries: int = Field(
        1, ge=0, le=5, description="Extra attempts when the answer is not valid JSON/schema."
    )


DEFAULT_ASSISTANT_SPEAKERS = ("assistant", "ai", "bot", "system", "chatgpt", "claude", "gpt")


class FactsSettings(_Section):
    """Fact extraction at ingest (the LLM's or the offline rules')."""

    assistant_speakers: tuple[str, ...] = Field(
        DEFAULT_ASSISTANT_SPEAKERS,
        description="Speaker names (any case; comma-separated in the env) whose turns are an "
        "assistant's: their facts are marked said_by assistant (metadata) and get at most 0.5 "
        "confidence.",
    )
    from_assistant: bool = Field(
        True, description="Extract facts from assistant turns at all (false: only from the others)."
    )

    @field_validator("assistant_speakers", mode="before")
    @classmethod
    def _speakers(cls, value: Any) -> Any:
        return _split_list(value)


class GateSettings(_Section):
    enabled: bool = Field(True, description="Run the A-MAC admission gate on every write.")
    threshold: float = Field(
        4.0, ge=0, le=10, description="Composite score needed to admit (per tenant overridable)."
    )
    novelty_neighbours: int = Field(
        5, ge=1, le=100, description="Stored neighbours novelty is measured against."
    )


class DedupSettings(_Section):
    """Which stored neighbours are close enough to be a near duplicate. A close neighbour
    is merged only when it carries the same information (app.services.memory.dedup)."""

    near_cosine: float = Field(
        0.92, ge=0, le=1, description="Close neighbour: cosine at least this AND token Jaccard..."
    )
    near_jaccard: float = Field(0.5, ge=0, le=1, description="...above this.")
    strong_cosine: float = Field(
        0.95, ge=0, le=1, description="Close neighbour on cosine alone at or above this."
    )


class CommitSettings(_Section):
    max_text_chars: int = Field(
        32000, ge=1, le=1_000_000, description="Longest note or turn accepted."
    )
    max_turns: int = Field(
        10000, ge=1, description="Most turns accepted in one commit_conversation."
    )
    window_size: int = Field(5, ge=1, le=100, description="Turns per conversation window.")
    stride: int = Field(2, ge=1, le=100, description="Turns between window starts.")


class WorkerSettings(_Section):
    enabled: bool = Field(
        True, description="Drain the job queue inside `elephant serve` (else: `elephant worker`)."
    )
    poll_interval_s: float = Field(1.0, gt=0, description="Idle wait between queue polls.")
    max_attempts: int = Field(5, ge=1, le=100, description="Tries before a job is marked failed.")
    backoff_s: float = Field(
        2.0, ge=0, description="First retry delay; doubles with every failed attempt."
    )


class ContradictionSettings(_Section):
    candidates: int = Field(
        5, ge=1, le=50, description="Most similar active facts of the subject compared."
    )
    min_similarity: float = Field(
        0.35, ge=0, le=1, description="Cosine below which facts are not compared."
    )


class SearchSettings(_Section):
    windows: int = Field(45, ge=0, le=1000, description="Windows-dense lane size per variant.")
    facts: int = Field(15, ge=0, le=1000, description="Facts-dense lane size per variant.")
    keyword: int = Field(
        10, ge=0, le=1000, description="Keyword lane size per variant (memories and facts each)."
    )
    generic_plan: bool = Field(
        True,
        description="Plan the search statement once per connection (a generic plan) instead "
        "of on every search. Off: Postgres chooses (custom plans first).",
    )
    rrf_k: int = Field(
        10,
        ge=1,
        le=10000,
        description="Reciprocal Rank Fusion constant: smaller trusts each lane's first results "
        "more (10 chosen on LoCoMo conversations 1-5 from 5, 10, 15, 30, 60).",
    )
    windows_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the windows lane.")
    passage_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Share of a window's dense score taken from its best passage (a turn, or a "
        "part of a long turn or note) rather than the whole-window vector; 0: window vector only.",
    )
    passage_candidates: int = Field(
        10,
        ge=0,
        le=1000,
        description="How many nearest passages per variant bring in their windows (the windows "
        "lane's candidates besides its nearest windows; at most windows of them); 0: none, "
        "the passage blend still applies to the other candidates. 10 chosen from 45, 20, 10: "
        "the same LoCoMo recall, fewer windows to score.",
    )
    facts_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the facts lane.")
    keyword_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the keyword lane.")
    variant_weight: float = Field(
        0.3, ge=0, le=1, description="RRF weight of each added query variant (the query: 1)."
    )
    default_limit: int = Field(10, ge=1, le=200, description="Results when a request names none.")
    expand: bool = Field(
        False,
        description="Add query variants (names, paraphrases) unless a request says otherwise; "
        "off by default: on LoCoMo it lowered recall@1 and @10 (benchmarks/locomo.py).",
    )
    max_variants: int = Field(5, ge=1, le=20, description="Most query variants per search.")
    diversify: bool = Field(
        True,
        description="Move results that only repeat conversation turns shown above them below "
        "the results that bring new turns (a window's own facts no longer crowd out other "
        "evidence).",
    )
    diversity_pool: int = Field(
        3, ge=1, le=10, description="With diversify: fused candidates fetched per result asked for."
    )
    keyword_engine: Literal["auto", "bm25", "tsvector"] = Field(
        "auto",
        description="auto: BM25 when pg_textsearch is installed and its probe finds what the "
        "tables hold, else tsvector ranking.",
    )
    bm25_rebuild_on_restart: bool = Field(
        True,
        description="REINDEX the BM25 indexes once per server start (pg_textsearch 1.0.0 "
        "loses statistics and unflushed postings at restart; ~2.5 s per 100k rows).",
    )
    keyword_probe_seconds: float = Field(
        60.0,
        ge=1,
        le=86400,
        description="/health probes the BM25 indexes again when its last probe is older "
        "than this; a failed probe switches search to tsvector and rebuilds them.",
    )
    tenant_index_rows: int = Field(
        20_000,
        ge=0,
        le=1_000_000_000,
        description="A tenant with fewer vector rows (in its largest of memories, facts, "
        "passages) is searched exactly; one with more gets HNSW indexes of its own, built "
        "online by the worker (0: every tenant gets its own).",
    )
    tenant_index_check_s: float = Field(
        300.0,
        ge=0,
        le=86400,
        description="How often the worker counts tenants' rows and builds or drops their "
        "own HNSW indexes (0: never; `elephant maintain tenant-indexes` runs it once).",
    )
    vector_way_cache_s: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="How long a process remembers how a tenant's vector lanes are served "
        "(exact, own or shared indexes) before reading it again.",
    )
    recency_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Weight of the recency prior added to the fused score (0 = off).",
    )
    half_life_days: float = Field(23.0, gt=0, description="Half-life of the recency prior.")
    date_weight: float = Field(
        0.5,
        ge=0,
        le=10,
        description="A question that names a date or period lifts results dated then (event "
        "or valid_from, give or take a week) by this many rank-1 hits of one lane; 0: off.",
    )
    fact_support: float = Field(
        1.0,
        ge=0,
        le=10,
        description="A window gains this times the fused score of the best fact made from its "
        "turns (and joins the results if no lane found it): its facts speak for it.",
    )
    assistant_fact_weight: float = Field(
        0.5,
        ge=0,
        le=1,
        description="RRF score factor of facts an assistant said (facts.assistant_speakers): "
        "lower-trust than what a person said; 0 keeps them last, 1 treats them alike.",
    )
    recently_accessed_minutes: float = Field(
        30.0, ge=0, description="/proactive skips memories accessed this recently."
    )
    graph: int = Field(
        15,
        ge=0,
        le=1000,
        description="Graph lane size: facts of the 1-hop neighbours (recorded relations) of "
        "entities the query names (0 = off; absent with graph.enabled = false).",
    )
    graph_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the graph lane.")
    preferences: int = Field(
        2,
        ge=0,
        le=100,
        description="Preference lane size: the standing preferences and instructions "
        '("always ...", "I\'m vegetarian") nearest the question; 0: off.',
    )
    preference_weight: float = Field(
        1.0, ge=0, le=10, description="RRF weight of the preference lane."
    )
    preference_min_similarity: float = Field(
        0.2,
        ge=-1,
        le=1,
        description="Cosine below which a standing preference is off the question's topic.",
    )


class RerankerSettings(_Section):
    enabled: bool = Field(False, description="Rerank the fused pool with the reranker service.")
    url: str = Field("http://127.0.0.1:7788", description="Base URL of reranker_server.")
    timeout_s: float = Field(2.0, gt=0, description="Seconds before search falls back to RRF.")
    pool: int = Field(70, ge=1, le=500, description="Fused candidates sent to the reranker.")
    instruction: str | None = Field(
        None, description="Instruction for instruction-aware rerankers (Qwen3-Reranker)."
    )
    failure_threshold: int = Field(
        3, ge=1, le=100, description="Consecutive failures that open the circuit breaker."
    )
    cooldown_s: float = Field(
        30.0, ge=0, description="Seconds the breaker stays open before one trial request."
    )


class GraphSettings(_Section):
    enabled: bool = Field(
        True, description="Knowledge-graph features (AGE or relational: see graph.backend)."
    )
    domains: tuple[str, ...] = Field(
        (
            "software", "music", "history", "philosophy", "health", "writing", "neuro",
            "finance", "personal", "general",
        ),
        min_length=1,
        description="Subject domains an entity may belong to (comma-separated in the env).",
    )  # fmt: skip
    backend: Literal["auto", "age", "relational"] = Field(
        "auto",
        description="Where the graph lives: Apache AGE, or ordinary tables (relational, for "
        "Postgres services without AGE). auto: AGE when the server has it, else relational.",
    )
    link_ingest: bool = Field(
        True, description="Upsert the entities of extracted facts and link them (mentions)."
    )
    max_items: int = Field(
        2000, ge=1, le=100000, description="Most entities, relations or observations per call."
    )

    @field_validator("domains", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return _split_list(value)


class ReflectSettings(_Section):
    limit: int = Field(10, ge=1, le=60, description="Sources given to the LLM.")
    max_context_chars: int = Field(
        12000, ge=500, le=200000, description="Longest numbered context block."
    )


class TenantSettings(_Section):
    default: str = Field("default", description="Tenant used when a request names none.")
    owner: str = Field(
        "user",
        min_length=1,
        max_length=200,
        description='Who "I" and "my" in a note are when neither the note (subject) nor the '
        "tenant (PUT /tenant/owner) names them.",
    )

    @field_validator("default")
    @classmethod
    def _tenant_id(cls, value: str) -> str:
        return validate_tenant_id(value)

    @field_validator("owner")
    @classmethod
    def _owner_name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name someone (e.g. user, or the person's name)")
        return value.strip()


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


def _json_mapping(value: Any) -> Any:
    """A mapping given as JSON text (an environment variable) as a dict."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ValueError('a JSON object is needed, e.g. {"chat": 30}')
    return value


MAINTENANCE_KINDS = ("decay", "dedup", "backfill", "retention", "reembed")


class LifecycleSettings(_Section):
    """Activation, decay and retention of memories (issue 16)."""

    half_life_days: float = Field(
        23.0, gt=0, le=36500, description="Activation half-life of a memory of importance 50."
    )
    importance_factor: float = Field(
        3.0,
        ge=1,
        le=100,
        description="Half-life x this at importance 100, / this at importance 0 (1: "
        "importance does not change the half-life).",
    )
    access_boost: float = Field(
        0.25,
        ge=0,
        le=10,
        description="Activation strength x (1 + this x ln(1 + access count)): use keeps it alive.",
    )
    access_flush_seconds: float = Field(
        5.0,
        ge=0.05,
        le=600,
        description="Uses (search hits, fetches by id) are added up in memory and written to "
        "access_stats as one batch per tenant this often, and at shutdown: a search writes "
        "no memory or fact row. A process killed with SIGKILL loses at most this much.",
    )
    search_weight: float = Field(
        0.0,
        ge=0,
        le=10,
        description="Activation prior in search: a hit gains this x activation / (rrf_k + 1) "
        "(0 = off).",
    )
    dormant_below: float = Field(
        0.05,
        ge=0,
        le=1,
        description="The decay job marks rows below this activation dormant (dormant_at); "
        "nothing is hidden or deleted.",
    )
    retention: dict[str, float] = Field(
        default_factory=dict,
        description='Days to keep each source, e.g. {"chat": 30}: the retention job erases '
        "older conversations, memories and facts of that source (JSON in the environment).",
    )

    @field_validator("retention", mode="before")
    @classmethod
    def _retention(cls, value: Any) -> Any:
        return _json_mapping(value)

    @field_validator("retention")
    @classmethod
    def _retention_days(cls, value: dict[str, float]) -> dict[str, float]:
        for source, days in value.items():
            if not source.strip():
                raise ValueError("a retention source must not be blank")
            if not 0 < days <= 36500:
                raise ValueError(f"retention of {source!r} must be 0-36500 days, got {days}")
        return value


class MaintenanceSettings(_Section):
    """Maintenance jobs (decay, dedup sweep, re-embed, backfill) and their schedule."""

    schedule: dict[str, float] = Field(
        default_factory=lambda: {"decay": 24.0, "dedup": 24.0, "backfill": 6.0, "retention": 24.0},
        description="Hours between runs of each maintenance kind per tenant, queued by the "
        "worker (0 or absent: not scheduled); JSON in the environment.",
    )
    enabled: bool = Field(True, description="The worker queues due maintenance jobs.")
    check_interval_s: float = Field(
        60.0, ge=1, le=86400, description="How often the worker looks for due maintenance."
    )
    dedup_batch: int = Field(
        1000, ge=1, le=100000, description="Notes one dedup sweep job compares."
    )
    decay_batch: int = Field(
        10000, ge=1, le=1000000, description="Rows one decay job marks or wakes, per table."
    )

    @field_validator("schedule", mode="before")
    @classmethod
    def _schedule(cls, value: Any) -> Any:
        return _json_mapping(value)

    @field_validator("schedule")
    @classmethod
    def _schedule_kinds(cls, value: dict[str, float]) -> dict[str, float]:
        for kind, hours in value.items():
            if kind not in MAINTENANCE_KINDS:
                raise ValueError(f"unknown maintenance kind {kind!r}: one of {MAINTENANCE_KINDS}")
            if not 0 <= hours <= 8760:
                raise ValueError(f"interval of {kind!r} must be 0-8760 hours, got {hours}")
            if 0 < hours * 3600 < 60:
                raise ValueError(f"interval of {kind!r} must be at least one minute")
        return value


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


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("elephant", appauthor=False))


class ConsoleSettings(_Section):
    """The web console at /ui (app/console): what the agent remembers, in a browser."""

    enabled: bool = Field(True, description="Serve the web console at /ui.")
    session_hours: float = Field(
        12.0,
        ge=0.02,
        le=720,
        description="How long a console sign-in lasts (signing out, or revoking the key, ends "
        "it sooner).",
    )
    secure_cookie: Literal["auto", "always", "never"] = Field(
        "auto",
        description="Mark the session cookie Secure (sent over HTTPS only): auto does so when "
        "the request came over HTTPS (a TLS proxy must pass the scheme on).",
    )


class Settings(_Section):
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="Where the embedded server keeps its data (default: the user data dir, "
        "e.g. ~/.local/share/elephant).",
    )
    database: DatabaseSettings = DatabaseSettings()
    embedded: EmbeddedSettings = EmbeddedSettings()
    server: ServerSettings = ServerSettings()
    auth: AuthSettings = AuthSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    llm: LLMSettings = LLMSettings()
    facts: FactsSettings = FactsSettings()
    gate: GateSettings = GateSettings()
    dedup: DedupSettings = DedupSettings()
    commit: CommitSettings = CommitSettings()
    worker: WorkerSettings = WorkerSettings()
    contradiction: ContradictionSettings = ContradictionSettings()
    search: SearchSettings = SearchSettings()
    reranker: RerankerSettings = RerankerSettings()
    reflect: ReflectSettings = ReflectSettings()
    graph: GraphSettings = GraphSettings()
    tenant: TenantSettings = TenantSettings()
    mcp: McpSettings = McpSettings()
    log: LogSettings = LogSettings()
    lifecycle: LifecycleSettings = LifecycleSettings()
    maintenance: MaintenanceSettings = MaintenanceSettings()
    metrics: MetricsSettings = MetricsSettings()
    console: ConsoleSettings = ConsoleSettings()

    @property
    def uses_embedded(self) -> bool:
        return self.database.url is None


TENANT_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def validate_tenant_id(value: str) -> str:
    if not TENANT_ID_PATTERN.match(value):
        raise ValueError(
            f"tenant id {value!r} is invalid: use 1-63 lower-case letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
    return value


# ---------------------------------------------------------------- key catalogue


def iter_keys() -> Iterator[tuple[str, str, Any, str, bool]]:
    """Yield (dotted key, env name, default, description, secret) for every setting."""
    for name, field in Settings.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, _Section):
            for sub_name, sub in annotation.model_fields.items():
                extra = sub.json_schema_extra if isinstance(sub.json_schema_extra, dict) else {}
                yield (
                    f"{name}.{sub_name}",
                    f"{ENV_PREFIX}{name.upper()}_{sub_name.upper()}",
                    sub.get_default(call_default_factory=True),
                    sub.description or "",
                    bool(extra.get("secret")),
                )
        else:
            yield (
                name,
                f"{ENV_PREFIX}{name.upper()}",
                field.get_default(call_default_factory=True),
                field.description or "",
                False,
            )


# Keys that existed once: naming one says what replaced it instead of "unknown key".
REMOVED_KEYS = {
    "mcp.token": "mcp.token was replaced by API keys: create one with `elephant keys create "
    "--tenant T --scopes read,write` and send it as 'Authorization: Bearer <key>'",
}

# Conventional names read too; the ELEPHANT_ name wins when both are set.
ENV_ALIASES = {"DATABASE_URL": "database.url", "ANTHROPIC_API_KEY": "llm.anthropic_api_key"}


def _env_key_map() -> dict[str, str]:
    mapping = {env: key for key, env, *_ in iter_keys()}
    mapping.update(ENV_ALIASES)
    return mapping


# ---------------------------------------------------------------- loading


def load_settings(
    environ: Mapping[str, str] | None = None, config_path: Path | None = None
) -> Settings:
    """Read the TOML file and the environment, validate, and say exactly what is wrong."""
    env = os.environ if environ is None else environ
    sources: dict[str, str] = {}
    data: dict[str, Any] = {}

    config_file = env.get(CONFIG_ENV)
    path = config_path or (Path(config_file) if config_file else None)
    if path is not None:
        data = _read_toml(path)
        for key in _flatten(data):
            sources[key] = str(path)

    key_map = _env_key_map()
    unknown: list[str] = []
    for env_name, raw in env.items():
        if env_name in _RESERVED_ENV:
            continue
        dotted = key_map.get(env_name)
        if dotted is None:
            if env_name.startswith(ENV_PREFIX):
                unknown.append(env_name)
            continue
        if env_name in ENV_ALIASES and _own_env_name(dotted) in env:
            continue  # the explicit ELEPHANT_ name wins
        _assign(data, dotted, raw)
        sources[dotted] = env_name
    if unknown:
        raise ConfigError(_unknown_message(unknown, list(key_map)))

    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc, sources)) from None


def _own_env_name(dotted: str) -> str:
    return ENV_PREFIX + dotted.replace(".", "_").upper()


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} (from {CONFIG_ENV}) does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{dotted}.")
        else:
            yield dotted


def _assign(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{part!r} must be a table of settings, not {child!r}")
        node = child
    node[leaf] = value


def _unknown_message(unknown: list[str], known: list[str]) -> str:
    lines = []
    removed = {_own_env_name(key): why for key, why in REMOVED_KEYS.items()}
    for name in sorted(unknown):
        if name in removed:
            lines.append(f"{name}: {removed[name]}")
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        lines.append(f"unknown environment variable {name}{hint}")
    return "; ".join(lines) + ". Run `elephant config reference` for every key."


def _validation_message(exc: ValidationError, sources: dict[str, str]) -> str:
    problems = []
    valid_keys = [key for key, *_ in iter_keys()]
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        origin = sources.get(key)
        where = f" (from {origin})" if origin else ""
        if error["type"] == "extra_forbidden" and key in REMOVED_KEYS:
            problems.append(f"{key}{where}: {REMOVED_KEYS[key]}")
            continue
        if error["type"] == "extra_forbidden":
            close = difflib.get_close_matches(key, valid_keys, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            problems.append(f"{key}{where}: unknown key{hint}")
            continue
        value = error.get("input")
        if isinstance(value, Mapping):  # a check across a section's keys: some may be secret
            problems.append(f"{key}{where}: {error['msg'].removeprefix('Value error, ')}")
            continue
        shown = "<secret>" if _is_secret(key) else repr(value)
        problems.append(f"{key}{where}: {error['msg']} (got {shown})")
    return "invalid configuration: " + "; ".join(problems)


def _is_secret(key: str) -> bool:
    return any(secret and dotted == key for dotted, _, _, _, secret in iter_keys())


def redacted(settings: Settings) -> dict[str, Any]:
    """The effective settings with secrets hidden, for `elephant config show` and logs."""
    dump = settings.model_dump(mode="json")
    for dotted, _, _, _, secret in iter_keys():
        if not secret:
            continue
        section, _, leaf = dotted.partition(".")
        if dump.get(section, {}).get(leaf) is not None:
            dump[section][leaf] = "<secret>"
    return dump


def reference_markdown() -> str:
    """The README's configuration table, generated so it cannot drift."""
    rows = ["| key | environment | default | meaning |", "| --- | --- | --- | --- |"]
    for dotted, env, default, description, _ in iter_keys():
        if dotted == "data_dir":
            shown = "user data dir"
        elif default is None:
            shown = "unset"
        elif isinstance(default, bool):
            shown = f"`{str(default).lower()}`"
        else:
            shown = f"`{default}`"
        aliases = [alias for alias, target in ENV_ALIASES.items() if target == dotted]
        env_names = ", ".join(f"`{name}`" for name in [env, *aliases])
        rows.append(f"| `{dotted}` | {env_names} | {shown} | {description} |")
    return "\n".join(rows)

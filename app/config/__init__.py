"""Settings: a TOML file (``ELEPHANT_CONFIG``) overlaid by ``ELEPHANT_*`` variables.

Built once at start by :func:`load_settings`, never at import. Every key has a
type, a default and a description; the reference table is generated from these
models (``elephant config reference``) and a test keeps it in sync. Environment
names are ``ELEPHANT_<SECTION>_<KEY>`` (``ELEPHANT_SERVER_PORT``), ``ELEPHANT_<KEY>``
for top-level keys (``ELEPHANT_DATA_DIR``), and the conventional ``DATABASE_URL``.
One module per section or group of related sections; ``settings`` composes them
into the root :class:`Settings` and loads it, ``reference`` renders the table.
Import from here (``from app.config import Settings``), not from the modules.
"""

from __future__ import annotations

from app.config.base import TENANT_ID_PATTERN, validate_tenant_id
from app.config.database import DatabaseSettings, EmbeddedSettings
from app.config.embedding import EmbeddingSettings
from app.config.facts import (
    DEFAULT_ASSISTANT_SPEAKERS,
    ContradictionSettings,
    FactsSettings,
    GraphSettings,
)
from app.config.gate import CommitSettings, DedupSettings, GateSettings
from app.config.lifecycle import MAINTENANCE_KINDS, LifecycleSettings, MaintenanceSettings
from app.config.llm import LLMSettings
from app.config.reference import reference_markdown
from app.config.search import ReflectSettings, RerankerSettings, SearchSettings
from app.config.security import AuthSettings, ConsoleSettings, TenantSettings
from app.config.service import (
    LogSettings,
    McpSettings,
    MetricsSettings,
    ServerSettings,
    WorkerSettings,
)
from app.config.settings import (
    CONFIG_ENV,
    ENV_ALIASES,
    ENV_PREFIX,
    REMOVED_KEYS,
    Settings,
    iter_keys,
    load_settings,
    redacted,
)

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_ASSISTANT_SPEAKERS",
    "ENV_ALIASES",
    "ENV_PREFIX",
    "MAINTENANCE_KINDS",
    "REMOVED_KEYS",
    "TENANT_ID_PATTERN",
    "AuthSettings",
    "CommitSettings",
    "ConsoleSettings",
    "ContradictionSettings",
    "DatabaseSettings",
    "DedupSettings",
    "EmbeddedSettings",
    "EmbeddingSettings",
    "FactsSettings",
    "GateSettings",
    "GraphSettings",
    "LLMSettings",
    "LifecycleSettings",
    "LogSettings",
    "MaintenanceSettings",
    "McpSettings",
    "MetricsSettings",
    "ReflectSettings",
    "RerankerSettings",
    "SearchSettings",
    "ServerSettings",
    "Settings",
    "TenantSettings",
    "WorkerSettings",
    "iter_keys",
    "load_settings",
    "redacted",
    "reference_markdown",
    "validate_tenant_id",
]

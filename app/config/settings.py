"""The root ``Settings``, the key catalogue, and loading from the TOML file and the env.

``Settings`` composes the sections in the order the reference table lists them (the
field order also makes the environment names). :func:`iter_keys` walks every key;
:func:`load_settings` reads the TOML file named by ``ELEPHANT_CONFIG``, overlays the
``ELEPHANT_*`` variables (and the conventional aliases), validates, and says exactly
which key from which source is wrong; :func:`redacted` hides the secrets.
"""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import Field, ValidationError

from app.config.base import _Section
from app.config.database import DatabaseSettings, EmbeddedSettings
from app.config.embedding import EmbeddingSettings
from app.config.facts import ContradictionSettings, FactsSettings, GraphSettings
from app.config.gate import CommitSettings, DedupSettings, GateSettings
from app.config.lifecycle import LifecycleSettings, MaintenanceSettings
from app.config.llm import LLMSettings
from app.config.search import ReflectSettings, RerankerSettings, SearchSettings
from app.config.security import AuthSettings, ConsoleSettings, TenantSettings
from app.config.service import (
    LogSettings,
    McpSettings,
    MetricsSettings,
    ServerSettings,
    WorkerSettings,
)
from app.errors import ConfigError
from app.protocol import JSONObject

log = logging.getLogger(__name__)

CONFIG_ENV = "ELEPHANT_CONFIG"
ENV_PREFIX = "ELEPHANT_"
# Environment names that are not settings keys but are still ours.
# Read by the Python client (elephant_client), never by the server; a shell that exports
# them for the client must still start the server.
_RESERVED_ENV = frozenset({CONFIG_ENV, "ELEPHANT_URL", "ELEPHANT_API_KEY"})


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("elephant", appauthor=False))


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


def _own_env_name(dotted: str) -> str:
    return ENV_PREFIX + dotted.replace(".", "_").upper()


# Keys renamed: the old name (TOML or environment) is still read, with a warning, and the
# new name wins when both are set.
RENAMED_KEYS = {"search.preference_weight": "search.preferences_weight"}

# Conventional names read too; the ELEPHANT_ name wins when both are set.
ENV_ALIASES = {
    "DATABASE_URL": "database.url",
    "ANTHROPIC_API_KEY": "llm.anthropic_api_key",
    **{_own_env_name(old): new for old, new in RENAMED_KEYS.items()},
}


def _env_key_map() -> dict[str, str]:
    mapping = {env: key for key, env, *_ in iter_keys()}
    mapping.update(ENV_ALIASES)
    return mapping


def _renamed(data: JSONObject) -> None:
    """Move a TOML value under a renamed key to its new name (the new one wins)."""
    for old, new in RENAMED_KEYS.items():
        section, old_leaf = old.split(".")
        table = data.get(section)
        if isinstance(table, dict) and old_leaf in table:
            value = table.pop(old_leaf)
            table.setdefault(new.split(".")[1], value)
            log.warning("setting %s is now %s: rename it", old, new)


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
        _renamed(data)
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
        if env_name in ENV_ALIASES and dotted in RENAMED_KEYS.values():
            log.warning("environment variable %s is now %s", env_name, _own_env_name(dotted))
        _assign(data, dotted, raw)
        sources[dotted] = env_name
    if unknown:
        raise ConfigError(_unknown_message(unknown, list(key_map)))

    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc, sources)) from None


def _read_toml(path: Path) -> JSONObject:
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


def _assign(data: JSONObject, dotted: str, value: Any) -> None:
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


def redacted(settings: Settings) -> JSONObject:
    """The effective settings with secrets hidden, for `elephant config show` and logs."""
    dump = settings.model_dump(mode="json")
    for dotted, _, _, _, secret in iter_keys():
        if not secret:
            continue
        section, _, leaf = dotted.partition(".")
        if dump.get(section, {}).get(leaf) is not None:
            dump[section][leaf] = "<secret>"
    return dump

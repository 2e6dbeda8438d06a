from __future__ import annotations

from pathlib import Path

import pytest

from app.config import load_settings, redacted, reference_markdown
from app.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_without_file_or_environment() -> None:
    settings = load_settings(environ={})
    assert settings.server.host == "127.0.0.1"
    assert settings.server.port == 7777
    assert settings.embedding.dim == 384
    assert settings.uses_embedded
    assert settings.data_dir.name == "elephant"


def test_toml_file_then_environment_overrides(tmp_path: Path) -> None:
    config = write(
        tmp_path / "elephant.toml",
        '[server]\nport = 8000\nhost = "0.0.0.0"\n[embedding]\ndim = 768\n',
    )
    settings = load_settings(
        environ={
            "ELEPHANT_CONFIG": str(config),
            "ELEPHANT_SERVER_PORT": "9001",
            "ELEPHANT_DATA_DIR": str(tmp_path / "data"),
        }
    )
    assert settings.server.port == 9001  # environment wins over the file
    assert settings.server.host == "0.0.0.0"  # file wins over the default
    assert settings.embedding.dim == 768
    assert settings.data_dir == tmp_path / "data"


def test_database_url_from_conventional_variable() -> None:
    settings = load_settings(environ={"DATABASE_URL": "postgresql://u:p@db.example/x"})
    assert settings.database.url == "postgresql://u:p@db.example/x"
    assert not settings.uses_embedded
    explicit = load_settings(
        environ={
            "DATABASE_URL": "postgresql://ignored/x",
            "ELEPHANT_DATABASE_URL": "postgresql://chosen/y",
        }
    )
    assert explicit.database.url == "postgresql://chosen/y"


def test_bad_type_names_key_and_source() -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_settings(environ={"ELEPHANT_SERVER_PORT": "eighty"})
    message = str(excinfo.value)
    assert "server.port" in message
    assert "ELEPHANT_SERVER_PORT" in message
    assert "'eighty'" in message


def test_out_of_range_value_says_the_bound(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "[server]\nport = 70000\n")
    with pytest.raises(ConfigError) as excinfo:
        load_settings(environ={"ELEPHANT_CONFIG": str(config)})
    message = str(excinfo.value)
    assert "server.port" in message and str(config) in message
    assert "65535" in message


def test_unknown_key_in_file_suggests_the_right_one(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "[server]\nprot = 1\n")
    with pytest.raises(ConfigError) as excinfo:
        load_settings(environ={"ELEPHANT_CONFIG": str(config)})
    assert "server.prot" in str(excinfo.value)
    assert "did you mean server.port" in str(excinfo.value)


def test_unknown_environment_variable_is_an_error() -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_settings(environ={"ELEPHANT_SERVR_PORT": "1"})
    assert "ELEPHANT_SERVR_PORT" in str(excinfo.value)
    assert "ELEPHANT_SERVER_PORT" in str(excinfo.value)


def test_missing_and_malformed_config_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(environ={"ELEPHANT_CONFIG": str(tmp_path / "nope.toml")})
    broken = write(tmp_path / "broken.toml", "[server\nport=1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(environ={"ELEPHANT_CONFIG": str(broken)})


def test_database_url_must_be_postgres_and_is_never_echoed() -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_settings(environ={"DATABASE_URL": "mysql://root:hunter2@x/y"})
    assert "database.url" in str(excinfo.value)
    assert "hunter2" not in str(excinfo.value)


def test_pool_bounds_are_checked_together() -> None:
    with pytest.raises(ConfigError, match="pool_min_size"):
        load_settings(
            environ={"ELEPHANT_DATABASE_POOL_MIN_SIZE": "8", "ELEPHANT_DATABASE_POOL_MAX_SIZE": "4"}
        )


def test_invalid_tenant_and_role_names() -> None:
    with pytest.raises(ConfigError, match="tenant.default"):
        load_settings(environ={"ELEPHANT_TENANT_DEFAULT": "Bad Tenant!"})
    with pytest.raises(ConfigError, match="database.app_role"):
        load_settings(environ={"ELEPHANT_DATABASE_APP_ROLE": "app; drop table x"})


def test_redacted_hides_secrets() -> None:
    settings = load_settings(
        environ={
            "DATABASE_URL": "postgresql://u:topsecret@h/d",
            "ELEPHANT_EMBEDDED_PASSWORD": "pw123456",
        }
    )
    shown = redacted(settings)
    assert shown["database"]["url"] == "<secret>"
    assert shown["embedded"]["password"] == "<secret>"
    assert "topsecret" not in str(shown)


def test_the_configuration_page_documents_every_key() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    assert reference_markdown() in page, "docs/configuration.md's table is stale: paste " + (
        "`elephant config reference`"
    )


def test_a_renamed_key_is_still_read_and_the_new_name_wins(tmp_path: Path) -> None:
    """search.preference_weight became search.preferences_weight (settings follow lane
    names): a config written for the old name keeps its meaning."""
    path = tmp_path / "elephant.toml"
    path.write_text("[search]\npreference_weight = 2.5\n")
    assert load_settings({}, path).search.preferences_weight == 2.5
    old_env = {"ELEPHANT_SEARCH_PREFERENCE_WEIGHT": "3"}
    assert load_settings(old_env).search.preferences_weight == 3.0
    both = {**old_env, "ELEPHANT_SEARCH_PREFERENCES_WEIGHT": "4"}
    assert load_settings(both).search.preferences_weight == 4.0
    path.write_text("[search]\npreference_weight = 2.5\npreferences_weight = 1.5\n")
    assert load_settings({}, path).search.preferences_weight == 1.5

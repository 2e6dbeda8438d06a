from __future__ import annotations

import pytest

from app.db import Database
from app.db.capabilities import Capabilities
from app.errors import CapabilityMissing


def test_embedded_server_reports_every_extension(db: Database) -> None:
    caps = db.capabilities
    assert caps is not None
    assert caps.server_version.startswith("18")
    assert caps.installed["vector"] == "0.8.1"
    assert caps.age and caps.installed["age"] == "1.7.0"
    assert caps.textsearch and caps.installed["pg_textsearch"] == "1.0.0"
    assert {"age", "pg_textsearch"} <= set(caps.preloaded)
    report = caps.report()
    assert report["vectorscale"] == {
        "installed": False,
        "available_version": "0.9.0",
        "note": "available; not used by this version",
    }


def test_missing_pgvector_says_how_to_install_it() -> None:
    caps = Capabilities(
        server_version="16.4", server_version_num=160004, available={"plpgsql": "1.0"}
    )
    with pytest.raises(CapabilityMissing, match="apt install postgresql-<major>-pgvector"):
        caps.require_pgvector()


def test_old_server_is_refused() -> None:
    caps = Capabilities(
        server_version="14.9", server_version_num=140009, available={"vector": "0.8.0"}
    )
    with pytest.raises(CapabilityMissing, match="PostgreSQL 15 or newer"):
        caps.require_pgvector()


def test_textsearch_not_preloaded_is_reported_with_the_fix() -> None:
    caps = Capabilities(
        server_version="17.2",
        server_version_num=170002,
        installed={"vector": "0.8.0"},
        available={"vector": "0.8.0", "pg_textsearch": "1.0.0"},
    )
    caps.require_pgvector()
    assert not caps.textsearch and not caps.age
    assert "shared_preload_libraries" in str(caps.report()["pg_textsearch"])
    assert caps.report()["age"] == {"installed": False, "note": "not available on this server"}

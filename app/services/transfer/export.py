"""Export one tenant to the JSON-lines file of ``fileformat``: every row, its graph, a header.

One REPEATABLE READ, READ ONLY transaction as the app role inside the tenant (row-level
security): the header's counts and every row come from one snapshot, whatever is
written meanwhile. Rows stream from a server-side cursor, each line built by Postgres
(``to_jsonb`` of the row), so memory stays flat however large the tenant.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from psycopg import sql

from app import __version__
from app.config import validate_tenant_id
from app.db.resources import fragment
from app.db.runtime import TENANT_SETTING, Connection, Database
from app.errors import InvalidInput, NotFound
from app.protocol import JSONObject
from app.services.access.erasure import count_tenant_rows
from app.services.graph.store import GraphStore
from app.services.graph.transfer import entity_pages
from app.services.runtime import Elephant
from app.services.transfer import catalog, fileformat
from app.services.transfer.catalog import Table

FETCH = 2000  # rows per round trip of the server-side cursor
# The vectors of the model in elephant_meta; another vector column (embedding_next while a
# re-embed runs, app/services/ops/reembed/) is work in progress, not exported.
VECTOR_COLUMN = "embedding"
# Columns written otherwise than as stored: (table, column) -> the SQL expression file
# (its slot {payload}: the column). A job's payload names only rows the tenant holds.
WRITTEN_AS: dict[tuple[str, str], str] = {("jobs", "payload"): "transfer/export_job_ids.sql"}


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What an export wrote: rows per section, bytes, seconds."""

    tenant: str
    counts: dict[str, int]
    vectors: bool
    bytes: int
    seconds: float
    path: str | None = None


@contextmanager
def snapshot(db: Database, tenant: str) -> Iterator[Connection]:
    """A read-only, repeatable-read transaction inside the tenant; NotFound when the
    tenant does not exist (an export of nothing is a typo, not an empty file)."""
    try:
        validate_tenant_id(tenant)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    with db.connection(snapshot=True) as conn:
        conn.execute(
            "SELECT set_config(%s, %s, true), set_config('statement_timeout', '0', true)",
            (TENANT_SETTING, tenant),
        )
        if conn.execute("SELECT 1 FROM tenants WHERE id = %s", (tenant,)).fetchone() is None:
            raise NotFound(f"no tenant {tenant!r} in this database")
        yield conn


def export_to_path(
    elephant: Elephant, tenant: str, path: Path, *, vectors: bool = True
) -> ExportReport:
    """Write to ``path`` (gzip when it ends in .gz) through a temporary file beside it, so a
    failed export leaves no partial file behind."""
    started = time.perf_counter()
    partial = path.with_name(f".partial-{path.name}")  # same suffix: gzip or not alike
    try:
        with fileformat.open_text(partial, "w") as out:
            report = export_tenant(elephant, tenant, out, vectors=vectors)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return ExportReport(
        tenant=report.tenant,
        counts=report.counts,
        vectors=report.vectors,
        bytes=path.stat().st_size,
        seconds=round(time.perf_counter() - started, 3),
        path=str(path),
    )


def export_tenant(
    elephant: Elephant, tenant: str, out: IO[str], *, vectors: bool = True
) -> ExportReport:
    """Stream the tenant to ``out``; ``vectors=False`` leaves vectors out (the import embeds
    again) and with them the rows that are only vectors (passages)."""
    started = time.perf_counter()
    store = elephant.graph if elephant.graph_decision.backend is not None else None
    with snapshot(elephant.db, tenant) as conn:
        tables = catalog.read(conn)
        exported = [table for table in tables.tables.values() if vectors or not table.needs_vectors]
        info = elephant.db.schema_info(conn)
        counts = {fileformat.TENANT_SECTION: 1}
        counts.update(
            {table.name: count_tenant_rows(conn, table.name, tenant) for table in exported}
        )
        if store is not None:
            graph = store.counts(conn, tenant)
            counts[fileformat.GRAPH_ENTITIES] = graph.entities
            counts[fileformat.GRAPH_RELATIONS] = sum(
                c.current + c.closed for c in graph.relations.values()
            )
        header = fileformat.Header(
            tenant=tenant,
            app_version=__version__,
            schema_revision=info.revision or "",
            embedding_model=info.embedding_model,
            embedding_dim=info.embedding_dim,
            vectors=vectors,
            graph_backend=None if store is None else store.backend,
            sections=list(counts),
            counts=counts,
            exported_at=datetime.now(UTC).isoformat(),
        )
        writer = _Writer(out)
        writer.line(header.to_json())
        writer.row_lines(fileformat.TENANT_SECTION, _tenant_row(conn, tenant))
        for table in exported:
            writer.row_lines(table.name, _rows(conn, table, tenant, vectors))
        if store is not None:
            _graph(conn, store, tenant, writer)
        writer.line(fileformat.trailer(writer.lines + 1, writer.counts))
    return ExportReport(
        tenant=tenant,
        counts=writer.counts,
        vectors=vectors,
        bytes=writer.bytes,
        seconds=round(time.perf_counter() - started, 3),
    )


class _Writer:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.lines = 0
        self.bytes = 0
        self.counts: dict[str, int] = {}

    def line(self, text: str) -> None:
        self.out.write(text)
        self.out.write("\n")
        self.lines += 1
        self.bytes += len(text.encode()) + 1

    def row_lines(self, section: str, lines: Iterator[str]) -> None:
        """Lines already in the form ``{"table": section, "row": {...}}``."""
        self.counts.setdefault(section, 0)
        for text in lines:
            self.line(text)
            self.counts[section] += 1


def _prefix(section: str) -> str:
    return '{"table": "' + section + '", "row": '


def _tenant_row(conn: Connection, tenant: str) -> Iterator[str]:
    row = conn.execute(
        "SELECT %s || (to_jsonb(t) - 'id')::text || '}' FROM tenants AS t WHERE t.id = %s",
        (_prefix(fileformat.TENANT_SECTION), tenant),
    ).fetchone()
    if row is not None:
        yield str(row[0])


def _rows(conn: Connection, table: Table, tenant: str, vectors: bool) -> Iterator[str]:
    """Each row as its line, built by Postgres, in its primary key's order: an import
    writes them in this order and keeps it in the ids it gives, so the copy exports in
    the same order (the physical order moves as rows are updated)."""
    dropped = ["tenant_id"] + [
        c.name
        for c in table.columns
        if c.generated or (c.vector and (not vectors or c.name != VECTOR_COLUMN))
    ]
    key = [name for name in table.primary_key if name != "tenant_id"] or ["ctid"]
    row: sql.Composable = sql.SQL("to_jsonb(t) - %(dropped)s::text[]")
    for (name, column), expression in WRITTEN_AS.items():
        if name == table.name and table.column(column) is not None:
            value = sql.SQL(fragment(expression)).format(payload=sql.Identifier("t", column))
            row = sql.SQL("({}) || jsonb_build_object({}, {})").format(
                row, sql.Literal(column), value
            )
    statement = sql.SQL(fragment("transfer/export_rows.sql")).format(
        table=sql.Identifier(table.name),
        order=sql.SQL(", ").join(sql.Identifier("t", name) for name in key),
        row=row,
    )
    with conn.cursor(name=f"elephant_export_{table.name}") as cursor:
        cursor.itersize = FETCH
        cursor.execute(
            statement, {"prefix": _prefix(table.name), "dropped": dropped, "tenant": tenant}
        )
        for (line,) in cursor:
            yield str(line)


def _graph(conn: Connection, store: GraphStore, tenant: str, writer: _Writer) -> None:
    """Entities page by page (the graph-migrate reader); then, paging again in the same
    snapshot, each relation once: with the page holding its source entity."""
    writer.counts[fileformat.GRAPH_ENTITIES] = 0
    for page in entity_pages(store, conn, tenant):
        writer.row_lines(
            fileformat.GRAPH_ENTITIES,
            (_graph_line(fileformat.GRAPH_ENTITIES, asdict(entity)) for entity in page),
        )
    writer.counts[fileformat.GRAPH_RELATIONS] = 0
    for page in entity_pages(store, conn, tenant):
        keys = {entity.key for entity in page}
        writer.row_lines(
            fileformat.GRAPH_RELATIONS,
            (
                _graph_line(
                    fileformat.GRAPH_RELATIONS,
                    {
                        "source": relation.source,
                        "relation_type": relation.relation_type,
                        "target": relation.target,
                        "properties": relation.properties,
                    },
                )
                for relation in store.relations(conn, tenant, sorted(keys), active_only=False)
                if relation.source in keys
            ),
        )


def _graph_line(section: str, row: JSONObject) -> str:
    return json.dumps({"table": section, "row": row}, ensure_ascii=False, default=str)

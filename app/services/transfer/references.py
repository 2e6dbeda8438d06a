"""Every reference in an import file points at a row of the same file.

Foreign keys check only that a row exists somewhere in the database, whoever owns it,
so a file whose ``facts.memory_id`` names another tenant's memory would import and
leave a fact pointing across tenants (issue 39). The tenant imported into is empty, so
a reference is sound only when the file brings the row it names. Checked set-based over
the staged lines (``sql/transfer/import_dangling*.sql``), before anything is written,
with or without new ids:

- every single-column foreign key the catalog reports between exported tables
  (conversations, memories and their ``superseded_by`` chains, store item history
  included, facts, turns a passage points at, ...);
- the ids without a foreign key (``UNKEYED``): ``access_stats.item_id`` (a memory or a
  fact by ``item_kind``), ``admission_log.conversation_id``, a graph relation's ends;
- uuid strings in job payloads (``PAYLOADS``): below the top level, where neither this
  check nor --new-ids reads them, none is taken. At the top level an id that names no
  conversation, memory or fact of the file is imported as null
  (``sql/transfer/import_job_ids.sql``) rather than refused: the database does not keep
  payloads in step with the rows (a note merged away by deduplication leaves its
  extraction job naming it), so a sound export may hold one, and as null it names no
  other tenant's row.

A refusal is InvalidInput naming the line, the table, the column and the value.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.db.resources import fragment
from app.db.runtime import Connection
from app.errors import InvalidInput
from app.services.transfer import fileformat
from app.services.transfer.catalog import Catalog

UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# Every string two levels or more below a JSON value's top (its members' members).
NESTED_STRINGS = 'strict $.**{2 to last} ? (@.type() == "string")'


@dataclass(frozen=True, slots=True)
class Unkeyed:
    """An id without a foreign key: ``section.column`` names a row of ``target`` (when
    ``when`` is given, only in rows whose field ``when[0]`` is ``when[1]``)."""

    section: str
    column: str
    target: str
    when: tuple[str, str] | None = None


UNKEYED: tuple[Unkeyed, ...] = (
    Unkeyed("access_stats", "item_id", "memories", ("item_kind", "memory")),
    Unkeyed("access_stats", "item_id", "facts", ("item_kind", "fact")),
    Unkeyed("admission_log", "conversation_id", "conversations"),
    Unkeyed(fileformat.GRAPH_RELATIONS, "source", fileformat.GRAPH_ENTITIES),
    Unkeyed(fileformat.GRAPH_RELATIONS, "target", fileformat.GRAPH_ENTITIES),
)
# uuid columns among them: with new ids they follow their row (importer._value).
UNKEYED_UUIDS: frozenset[tuple[str, str]] = frozenset(
    {("access_stats", "item_id"), ("admission_log", "conversation_id")}
)
# JSON columns whose top-level uuid strings are ids of the file's rows (or null).
PAYLOADS: tuple[tuple[str, str], ...] = (("jobs", "payload"),)


def check(conn: Connection, tables: Catalog, sections: set[str]) -> None:
    """Refuse the staged file when a reference names a row it does not bring."""
    conn.execute(fragment("transfer/import_keys_table.sql"))
    for table in tables.tables.values():
        if len(table.primary_key) == 1 and table.name in sections:
            _keys(conn, table.name, table.primary_key[0])
    if fileformat.GRAPH_ENTITIES in sections:
        _keys(conn, fileformat.GRAPH_ENTITIES, "key")
    conn.execute("ANALYZE elephant_import_keys")  # else planned as empty: a loop per row
    for table in tables.tables.values():
        if table.name not in sections:
            continue
        for ref in table.references:
            if ref.table in tables.tables:
                _dangling(conn, Unkeyed(table.name, ref.column, ref.table))
    for unkeyed in UNKEYED:
        if unkeyed.section in sections:
            _dangling(conn, unkeyed)
    for section, column in PAYLOADS:
        if section in sections:
            _nested(conn, section, column)


def _keys(conn: Connection, section: str, column: str) -> None:
    conn.execute(fragment("transfer/import_keys_fill.sql"), {"section": section, "column": column})


def _dangling(conn: Connection, ref: Unkeyed) -> None:
    when_field, when_value = ref.when or (None, None)
    found = conn.execute(
        fragment("transfer/import_dangling.sql"),
        {
            "section": ref.section,
            "column": ref.column,
            "target": ref.target,
            "when_field": when_field,
            "when_value": when_value,
        },
    ).fetchone()
    if found is not None:
        raise InvalidInput(
            f"line {found[0]}: {ref.section}.{ref.column} is {found[1]}, which is no row of "
            f"{ref.target} in this file: an import may point only at the rows it brings "
            "(the tenant it goes into is empty), not at another tenant's. Nothing was imported"
        )


def _nested(conn: Connection, section: str, column: str) -> None:
    nested = conn.execute(
        fragment("transfer/import_nested_uuids.sql"),
        {"section": section, "column": column, "path": NESTED_STRINGS, "uuid": UUID_PATTERN},
    ).fetchone()
    if nested is not None:
        raise InvalidInput(
            f"line {nested[0]}: {section}.{column} holds the id {nested[1]} below its top "
            "level, where ids are neither checked nor given new ones: put it at the top "
            "level. Nothing was imported"
        )

"""What a re-embed rewrites: the tables, the rows of each, the text each vector is made
from, and how a new vector is stored.

Per table, the expression a row's *version* is read by (the text its vector is made
from, or what picks that text) is checked again when the new vector is written, and the
columns that go with it build the text. As the write paths build it: a memory embeds its
text; an extracted fact its text, a graph observation 'name: text' or 'name (kind):
text' (app/services/graph/operations.py); a passage its part of a turn under the turn's
date and speaker, or its part of a long note (app/services/memory/passages.py). The
statements are sql/reembed/rows_<table>.sql, version_<table>.sql and write.sql, with the
table, columns and conditions composed in by psycopg.sql.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from psycopg import sql

from app.config import EmbeddingSettings
from app.db.resources import fragment
from app.db.runtime import Connection
from app.providers.embedder import Embedder, Vectors
from app.services.memory.window_vectors import stored_vectors
from app.services.memory.windows import WindowTurn, render_turn

TABLES = ("memories", "facts", "passages")
ALIAS = {"memories": "m", "facts": "f", "passages": "p"}
KEY_TYPE = {"memories": "uuid", "facts": "uuid", "passages": "bigint"}
KEY_START = {
    "memories": "00000000-0000-0000-0000-000000000000",
    "facts": "00000000-0000-0000-0000-000000000000",
    "passages": "0",
}
# What the re-embedded text depends on: an UPDATE of any of these clears embedding_next.
TRIGGER_COLUMNS = {
    "memories": ("embedding", "text"),
    "facts": ("embedding", "text", "subject", "observation_kind"),
    "passages": ("embedding", "char_start", "char_end", "turn_id", "memory_id"),
}


def _key(table: str) -> sql.Identifier:
    """The table's id, qualified by its alias (``m.id``)."""
    return sql.Identifier(ALIAS[table], "id")


def _key_type(table: str) -> sql.SQL:
    return sql.SQL(KEY_TYPE[table])  # uuid or bigint: a constant of this module


def version(table: str) -> sql.SQL:
    """The expression a row's version is read by (sql/reembed/version_<table>.sql)."""
    return sql.SQL(fragment(f"reembed/version_{table}.sql"))


def select_rows(table: str, where: str | sql.Composable) -> sql.Composed:
    """id, version, then the text's parts, of the rows ``where`` picks
    (sql/reembed/rows_<table>.sql)."""
    condition = where if isinstance(where, sql.Composable) else sql.SQL(where)
    return sql.SQL(fragment(f"reembed/rows_{table}.sql")).format(
        version=version(table), where=condition
    )


def after(table: str) -> sql.Composed:
    """The next keyset batch: ids after ``%s``, in id order, at most ``%s`` of them."""
    return sql.SQL("{key} > %s::{key_type} ORDER BY {key} LIMIT %s").format(
        key=_key(table), key_type=_key_type(table)
    )


def with_ids(table: str) -> sql.Composed:
    """The rows whose id is in the array ``%s``."""
    return sql.SQL("{key} = ANY (%s::{key_type}[])").format(
        key=_key(table), key_type=_key_type(table)
    )


def missing(conn: Connection, table: str, batch: int) -> list[tuple[Any, ...]]:
    """Up to ``batch`` rows of ``table`` without a new vector."""
    where = sql.SQL("{}.embedding_next IS NULL LIMIT %s").format(sql.Identifier(ALIAS[table]))
    return conn.execute(select_rows(table, where), (batch,)).fetchall()


def count_written(conn: Connection, written: int) -> None:
    if written:
        conn.execute("UPDATE elephant_reembed SET embedded = embedded + %s", (written,))


def texts_of(table: str, rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """The text to embed of each row from ``select_rows``."""
    if table != "passages":
        return [str(row[1]) for row in rows]
    texts = []
    for _, _, start, end, speaker, turn_text, when, note_text in rows:
        if turn_text is not None:
            prefix = render_turn(WindowTurn(0, str(speaker), "", when, None))
            texts.append(prefix + str(turn_text)[start:end])
        else:
            texts.append(str(note_text)[start:end])
    return texts


def write(
    conn: Connection,
    table: str,
    embedder: Embedder,
    rows: Sequence[tuple[Any, ...]],
    *,
    column: str = "embedding_next",
    check_version: bool = True,
    settings: EmbeddingSettings,
    also: Callable[[], None] | None = None,
) -> int:
    """Embed ``rows`` (from ``select_rows``) with the target, then store the vectors in one
    transaction (the embedding runs outside it). With ``check_version`` a row whose text
    changed since it was read is left alone: the writer's UPDATE cleared its new vector
    (the trigger) and the catch-up takes it. ``also`` runs in the same transaction.
    Returns the rows written. Windows are pooled from their turns as the commit pooled
    them when ``settings`` say so (app/services/memory/window_vectors.py)."""
    vectors: Vectors
    if table == "memories":
        vectors = stored_vectors(conn, settings, embedder, [(row[0], row[1]) for row in rows])
    else:
        vectors = embedder.embed_documents(texts_of(table, rows))
    alias = ALIAS[table]
    version_check = (
        sql.SQL(" AND ({}) = %s").format(version(table)) if check_version else sql.SQL("")
    )
    statement = sql.SQL(fragment("reembed/write.sql")).format(
        table=sql.Identifier(table),
        alias=sql.Identifier(alias),
        column=sql.Identifier(column),
        key=_key(table),
        key_type=_key_type(table),
        version_check=version_check,
    )
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(
            statement,
            [
                (vector, row[0], row[1]) if check_version else (vector, row[0])
                for row, vector in zip(rows, vectors, strict=True)
            ],
        )
        written = max(cursor.rowcount, 0)
        count_written(conn, written)
        if also is not None:
            also()
    return written

"""Start-up repair of pg_textsearch indexes.

pg_textsearch 1.0.0 (the embedded build) keeps its corpus statistics (document
count, average length) outside the WAL: after any server restart they read 0
and every BM25 query returns nothing, while the heap and postings are intact
(upstream: timescale/pg_textsearch#350). A REINDEX recomputes them, so at start
we rebuild each bm25 index whose statistics say empty over a non-empty table.
"""

from __future__ import annotations

import logging
import re

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

_TOTAL_DOCS = re.compile(r"total_docs:\s*(\d+)")
_TOTAL_LEN = re.compile(r"total_len:\s*(\d+)")


def bm25_indexes(conn: psycopg.Connection[tuple[object, ...]]) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT index.relname, tab.relname FROM pg_index AS i "
        "JOIN pg_class AS index ON index.oid = i.indexrelid "
        "JOIN pg_class AS tab ON tab.oid = i.indrelid "
        "JOIN pg_am AS am ON am.oid = index.relam "
        "JOIN pg_namespace AS ns ON ns.oid = tab.relnamespace "
        "WHERE am.amname = 'bm25' AND ns.nspname = current_schema() ORDER BY 1"
    ).fetchall()
    return [(str(index), str(table)) for index, table in rows]


def indexed_documents(conn: psycopg.Connection[tuple[object, ...]], index: str) -> int | None:
    row = conn.execute("SELECT bm25_summarize_index(%s)", (index,)).fetchone()
    return documents_counted(str(row[0]) if row else "")


def documents_counted(summary: str) -> int | None:
    """Documents a bm25_summarize_index() text counts; 0 also when it counts documents of
    total length 0 (seen after a restart: the count survived, the lengths did not, and
    every query finds nothing)."""
    docs, length = _TOTAL_DOCS.search(summary), _TOTAL_LEN.search(summary)
    if docs is None:
        return None
    if length is not None and int(length.group(1)) == 0:
        return 0
    return int(docs.group(1))


def repair_bm25_statistics(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """REINDEX the bm25 indexes that lost their statistics; returns their names.

    Needs a connection that sees every row (the embedded superuser, or an owner
    without forced row-level security); elsewhere the tables look empty and
    nothing is rebuilt.
    """
    rebuilt = []
    for index, table in bm25_indexes(conn):
        docs = indexed_documents(conn, index)
        row = conn.execute(
            sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(table))
        ).fetchone()
        if docs == 0 and row is not None and row[0]:
            log.warning("rebuilding %s: its BM25 statistics were lost at restart", index)
            conn.execute(sql.SQL("REINDEX INDEX {}").format(sql.Identifier(index)))
            rebuilt.append(index)
    return rebuilt

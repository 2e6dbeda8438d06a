"""Is the BM25 keyword lane to be trusted? Rebuild pg_textsearch's indexes once per server
start, probe that they find what the tables hold, and say so.

Why (pg_textsearch 1.0.0, the embedded build; source tag v1.0.0):

- The corpus statistics (total_docs, total_len) live in the index's metapage and are
  written only when the index is built (am/build.c). Inserts raise an in-memory copy
  that no spill writes back; at the first use after a restart the memtable is rebuilt
  from disk, recounted, and then overwritten with the metapage's values
  (state/state.c, tp_rebuild_index_from_disk). A query against statistics of 0 returns
  nothing (query/score.c). So an index created on an empty table (every new database)
  finds nothing after any restart, rows written since find themselves only.
- VACUUM lowers total_docs by the dead rows and never fixes total_len (am/vacuum.c):
  under updates and autovacuum a small index drifts to 0 and finds nothing either.
- Nothing is WAL-logged: after kill -9 (of the postmaster, or a crash) the rows
  written since the last checkpoint are missing from the index, with statistics that
  look fine.
- Upstream fixed these after 1.0.0 (timescale/pg_textsearch #333/#335 in 1.1.0, #347
  in 1.2.0, #374/#375 in 1.3.0); only 1.0.0 is packaged here. Spilling the memtable
  (bm25_spill_index), force-merging or pg_textsearch.memtable_spill_threshold do not
  help: only a build writes the statistics.

What this module does:

1. At start (Database.open, before any pool connection exists, and after the app
   revived a killed server): REINDEX each bm25 index once per server start, i.e. when
   pg_postmaster_start_time() differs from the one recorded in keyword_index_repairs.
   A rebuild reads the heap, which is WAL-protected: statistics and postings are whole
   again. Cost: ~0.5 s at 20k rows, ~2.5 s at 100k (per index).
2. A probe per index: its statistics must count documents when the table has rows,
   and sampled rows (the newest heap page, where rows lost in a crash are, and random
   pages) must be found by an ordered BM25 scan for a rare word of their own (a word
   fewer than PROBE_MAX_DF rows hold, counted through the tsvector GIN index).
3. A failed probe marks the lane untrusted (search uses the tsvector lane, /health says
   degraded), rebuilds the failed indexes, probes again.
4. After any rebuild, idle connections of this database opened before it are closed:
   pg_textsearch 1.0.0 backends keep per-index state across a REINDEX (#390), and rows
   they insert afterwards would be invisible to new sessions. Pools reconnect.

The probe and the rebuild need a connection that sees every row: the embedded
superuser, or an owner of the tables without forced row-level security.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from app.db.resources import load_sql
from app.errors import ElephantError

log = logging.getLogger(__name__)

Connection = psycopg.Connection[tuple[Any, ...]]
AdminConnection = Callable[[], AbstractContextManager[Connection]]

PROBE_ROWS = 6  # sampled rows per index: the newest page's, then random pages'
PROBE_MAX_DF = 100  # a probe word held by fewer rows than this is looked up
PROBE_WORDS_PER_ROW = 4  # candidate words tried per sampled row (the longest first)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{3,}")
_TOTAL_DOCS = re.compile(r"total_docs:\s*(\d+)")
_TOTAL_LEN = re.compile(r"total_len:\s*(\d+)")
_LOCK = 0x454C4B57  # advisory lock: one process rebuilds at a time


@dataclass(frozen=True, slots=True)
class IndexProbe:
    """What the probe found for one index."""

    index: str
    table: str
    documents: int | None  # per its statistics (None: unreadable)
    sampled: int  # rows with a probe word
    found: int  # of those, found by the index
    missing: tuple[str, ...] = ()  # ids of sampled rows the index did not find

    @property
    def ok(self) -> bool:
        return self.documents != 0 and self.found == self.sampled

    @property
    def reason(self) -> str:
        if self.documents == 0:
            return "its statistics count no documents while the table has rows"
        if self.found < self.sampled:
            return f"found {self.found} of {self.sampled} sampled rows by a word of their own"
        return f"found {self.found} of {self.sampled} sampled rows"


@dataclass(slots=True)
class KeywordState:
    """The lane's state as /health, doctor and search read it."""

    trusted: bool = True
    checked_at: datetime | None = None
    probes: list[IndexProbe] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)  # at the last start or repair
    rebuilt_because: str | None = None
    repairing: bool = False
    error: str | None = None


def bm25_indexes(conn: Connection) -> list[tuple[str, str]]:
    """(index, table) of every bm25 index in the current schema."""
    rows = conn.execute(load_sql("db/bm25_indexes.sql")).fetchall()
    return [(str(index), str(table)) for index, table in rows]


def indexed_documents(conn: Connection, index: str) -> int | None:
    row = conn.execute("SELECT bm25_summarize_index(%s)", (index,)).fetchone()
    return documents_counted(str(row[0]) if row else "")


def documents_counted(summary: str) -> int | None:
    """Documents a bm25_summarize_index() text counts; 0 also when it counts documents of
    total length 0 (after VACUUM under updates: the count kept, the lengths gone)."""
    docs, length = _TOTAL_DOCS.search(summary), _TOTAL_LEN.search(summary)
    if docs is None:
        return None
    if length is not None and int(length.group(1)) == 0:
        return 0
    return int(docs.group(1))


# ------------------------------------------------------------------ the probe


def _on_table(statement: str, table: str) -> sql.Composed:
    """``sql/<statement>`` with ``{table}`` composed in as an identifier."""
    return sql.SQL(load_sql(statement)).format(table=sql.Identifier(table))


def _sample(conn: Connection, table: str, rows: int, rng: random.Random) -> list[tuple[str, str]]:
    """(id, text) of up to ``rows`` rows: the newest heap page's first (what a crash loses),
    then random pages' (TID range scans: a page each, whatever the table's size)."""
    pages_row = conn.execute(
        "SELECT greatest(pg_relation_size(%s::regclass) / current_setting('block_size')::int, 1)",
        (table,),
    ).fetchone()
    pages = int(pages_row[0]) if pages_row else 1
    picked: dict[str, str] = {}
    blocks = [pages - 1] + [rng.randrange(pages) for _ in range(3)]
    query = _on_table("db/bm25_probe_page.sql", table)
    for block in blocks:
        for id_, text in conn.execute(query, (block, block + 1)).fetchall():
            if len(picked) < rows:
                picked.setdefault(str(id_), str(text))
        if len(picked) >= rows:
            break
    return list(picked.items())


def _rare_word(conn: Connection, table: str, text: str) -> tuple[str, int] | None:
    """A word of ``text`` held by fewer than PROBE_MAX_DF rows (the GIN index on tsv counts
    them), and how many hold it; None when every candidate is common or a stop word."""
    words = sorted(set(_WORD.findall(text)), key=lambda w: (-len(w), w))[:PROBE_WORDS_PER_ROW]
    count = _on_table("db/bm25_probe_df.sql", table)
    best: tuple[str, int] | None = None
    for word in words:
        row = conn.execute(count, (word, PROBE_MAX_DF)).fetchone()
        held = int(row[0]) if row else 0
        if 0 < held < PROBE_MAX_DF and (best is None or held < best[1]):
            best = (word, held)
    return best


def probe_index(conn: Connection, index: str, table: str, rng: random.Random) -> IndexProbe:
    exists = conn.execute(
        sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(table))
    ).fetchone()
    documents = indexed_documents(conn, index)
    if not exists or not exists[0]:
        return IndexProbe(index, table, documents=None, sampled=0, found=0)
    lookup = _on_table("db/bm25_probe_lookup.sql", table)
    sampled = found = 0
    missing: list[str] = []
    for id_, text in _sample(conn, table, PROBE_ROWS, rng):
        chosen = _rare_word(conn, table, text)
        if chosen is None:
            continue
        word, held = chosen
        sampled += 1
        hits = conn.execute(lookup, (word, index, word, index, held + 5)).fetchall()
        if any(str(hit) == id_ and score is not None and float(score) != 0 for hit, score in hits):
            found += 1
        else:
            missing.append(id_)
    return IndexProbe(index, table, documents, sampled, found, tuple(missing))


def probe(conn: Connection, seed: int | None = None) -> list[IndexProbe]:
    rng = random.Random(seed)  # noqa: S311 (which rows to sample, not a secret)
    return [probe_index(conn, index, table, rng) for index, table in bm25_indexes(conn)]


# ------------------------------------------------------------------ rebuilding


def server_started_at(conn: Connection) -> datetime:
    row = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def rebuilt_for(conn: Connection) -> dict[str, datetime]:
    """Index -> the server start it was last rebuilt for."""
    rows = conn.execute(
        "SELECT index_name, server_started_at FROM keyword_index_repairs"
    ).fetchall()
    return {str(name): at for name, at in rows}


def rebuild(conn: Connection, indexes: list[str], reason: str) -> list[str]:
    """REINDEX each index, record it, then close the idle connections opened before."""
    if not indexes:
        return []
    started_at = server_started_at(conn)
    before = conn.execute("SELECT now()").fetchone()
    for index in indexes:
        started = time.perf_counter()
        log.log(
            logging.WARNING if reason.startswith("probe") else logging.INFO,
            "rebuilding BM25 index %s: %s",
            index,
            reason,
        )
        conn.execute(sql.SQL("REINDEX INDEX {}").format(sql.Identifier(index)))
        conn.execute(
            load_sql("db/bm25_repair_record.sql"),
            (index, started_at, reason, time.perf_counter() - started),
        )
    if before is not None:
        _close_stale_sessions(conn, before[0])
    return indexes


def _close_stale_sessions(conn: Connection, rebuilt_at: datetime) -> None:
    """pg_textsearch 1.0.0 backends keep their per-index state across a REINDEX: close the
    idle sessions of this database that started before it (their pools reconnect)."""
    closed = conn.execute(load_sql("db/close_stale_sessions.sql"), (rebuilt_at,)).fetchone()
    if closed and closed[0]:
        log.info("closed %d idle sessions opened before the BM25 rebuild", closed[0])


# ------------------------------------------------------------------ the guard


class KeywordIndexGuard:
    """The keyword lane's state for one Database: rebuilt at start, probed on demand."""

    def __init__(self, admin: AdminConnection, *, rebuild_on_restart: bool = True) -> None:
        self._admin = admin
        self._rebuild_on_restart = rebuild_on_restart
        self._lock = threading.Lock()
        self._probing = threading.Lock()
        self._repair: threading.Thread | None = None
        self.state = KeywordState()

    @property
    def trusted(self) -> bool:
        return self.state.trusted

    @contextmanager
    def _rebuilding(self) -> Iterator[Connection]:
        """An admin connection holding the advisory lock: one process rebuilds at a time."""
        with self._admin() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK,))
            try:
                yield conn
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK,))

    def at_start(self) -> KeywordState:
        """Rebuild what this server start has not rebuilt yet, probe, repair what fails.
        Runs before the process opens its pools (and after a revived server)."""
        with self._rebuilding() as conn:
            rebuilt: list[str] = []
            because = None
            if self._rebuild_on_restart:
                started = server_started_at(conn)
                done = rebuilt_for(conn)
                stale = [i for i, _ in bm25_indexes(conn) if done.get(i) != started]
                because = "first use since the server started"
                rebuilt = rebuild(conn, stale, because)
            probes = probe(conn)
            failed = [p.index for p in probes if not p.ok]
            if failed:
                lost = "; ".join(f"{p.index}: {p.reason}" for p in probes if not p.ok)
                because = f"probe failed ({lost})"
                rebuilt += rebuild(conn, failed, because)
                probes = probe(conn)
        self._set(probes, rebuilt, because if rebuilt else None)
        return self.state

    def check(self, max_age_s: float = 60.0) -> KeywordState:
        """The state, probed again when older than ``max_age_s``; a failed probe marks the
        lane untrusted and starts a rebuild in the background."""
        checked = self.state.checked_at
        fresh = checked is not None and (datetime.now(UTC) - checked).total_seconds() < max_age_s
        if fresh or self.state.repairing:
            return self.state
        if not self._probing.acquire(blocking=False):  # another request probes right now
            return self.state
        try:
            with self._admin() as conn:
                probes = probe(conn)
        except (psycopg.Error, ElephantError) as exc:
            self.state.error = f"probe failed to run: {exc}"
            return self.state
        finally:
            self._probing.release()
        self._set(probes, self.state.rebuilt, self.state.rebuilt_because)
        if not self.state.trusted:
            self._start_repair([p for p in probes if not p.ok])
        return self.state

    def wait_for_repair(self, timeout_s: float = 120.0) -> None:
        thread = self._repair
        if thread is not None:
            thread.join(timeout_s)

    def _set(self, probes: list[IndexProbe], rebuilt: list[str], because: str | None) -> None:
        with self._lock:
            self.state = KeywordState(
                trusted=all(p.ok for p in probes),
                checked_at=datetime.now(UTC),
                probes=probes,
                rebuilt=rebuilt,
                rebuilt_because=because,
                repairing=self.state.repairing,
            )

    def _start_repair(self, failed: list[IndexProbe]) -> None:
        with self._lock:
            if self.state.repairing:
                return
            self.state.repairing = True
        reason = "; ".join(f"{p.index}: {p.reason}" for p in failed)
        log.warning("BM25 keyword lane untrusted (%s): search uses the tsvector lane", reason)

        def repair() -> None:
            try:
                with self._rebuilding() as conn:
                    indexes = [p.index for p in failed]
                    rebuilt = rebuild(conn, indexes, f"probe failed ({reason})")
                    probes = probe(conn)
                self._set(probes, rebuilt, reason)
            except (psycopg.Error, ElephantError) as exc:  # a thread: log, never die silently
                log.error("BM25 rebuild failed: %s", exc)
                self.state.error = f"rebuild failed: {exc}"
            finally:
                self.state.repairing = False

        self._repair = threading.Thread(target=repair, name="elephant-bm25-repair", daemon=True)
        self._repair.start()

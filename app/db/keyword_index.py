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
- A build reads the heap with a plain table scan (am/build.c, tp_setup_table_scan) and
  records each row under its visible version's TID, not its HOT chain's root: a row
  updated in place (no indexed column changed) cannot be fetched through the rebuilt
  index, so every REINDEX, this module's too, loses those rows (counted in total_docs,
  never returned). VACUUM does not help; a table rewrite (VACUUM FULL) does. The probe
  below finds them when it samples one; tests/integration/test_bm25_ties.py holds the
  reproduction (a strict xfail).
- Upstream fixed these after 1.0.0 (timescale/pg_textsearch #333/#335 in 1.1.0, #347
  in 1.2.0, #374/#375 in 1.3.0); only 1.0.0 is packaged here. Spilling the memtable
  (bm25_spill_index), force-merging or pg_textsearch.memtable_spill_threshold do not
  help: only a build writes the statistics.

What this module does:

1. At start (Database.open, and after the app revived a killed server): REINDEX each
   bm25 index once per server start, i.e. when pg_postmaster_start_time() differs from
   the one recorded in keyword_index_repairs. A rebuild reads the heap, which is
   WAL-protected: statistics and postings are whole again. Cost: ~0.5 s at 20k rows,
   ~2.5 s at 100k (per index).
2. A probe per index: its statistics must count documents when the table has rows,
   and sampled rows (the newest heap page, where rows lost in a crash are, and random
   pages) must be found by an ordered BM25 scan for a rare word of their own (a word
   fewer than PROBE_MAX_DF rows hold, counted through the tsvector GIN index).
3. A failed probe marks the lane untrusted (search uses the tsvector lane, /health says
   degraded), rebuilds the failed indexes, probes again.
4. After any rebuild, idle connections of this database opened before it are closed:
   pg_textsearch 1.0.0 backends keep per-index state across a REINDEX (#390), and rows
   they insert afterwards would be invisible to new sessions. The rebuilding process's
   own pools are drained instead (``on_rebuilt``), and the others' pools reconnect.

Who repairs (``Repairs``, chosen by whoever opens the Database):

- ``background``: a serving process (``elephant serve``, ``mcp``, ``worker``).
  Its start never waits on a rebuild: the lane starts untrusted (the tsvector lane
  serves) while a thread takes the advisory lock (without waiting on it: an outside
  session holding it delays the repair, never the start), rebuilds and probes.
- ``report``: a CLI command beside a running server. It probes and says what it found,
  and never rebuilds an index nor ends another process's session: a REINDEX from a
  one-shot command, and the sessions it closed, broke the server's connections
  (issue 39). The server repairs what its own probe (/health, doctor through it) finds.
  A command that started the embedded server itself is alone on it and repairs here.
- ``here``: rebuild and probe on the caller's thread (the library's default, tests).

Why a CLI's probe failed beside a server (issue 39: "found 4 of 6 sampled rows"): not a
false alarm. A session that used an index before a REINDEX keeps its pre-REINDEX state
(#390) and writes into it afterwards: its rows are invisible to every newer session, and
it sees none of theirs (reproduced: a row inserted by such a session after another
session's REINDEX is not found from a new session, an older row is). A CLI's REINDEX
closed only the server's *idle* sessions; those busy with a request lived on, stale, and
their writes went missing for the next command's probe, which rebuilt again and closed
13 more sessions: the cascade behind the 503s. Hence: only the server rebuilds, and it
drains its own pools (busy connections are closed when returned).

Every wait is bounded: the advisory lock is tried, not waited for, and a REINDEX gives
up after LOCK_TIMEOUT on the table's lock (a queued REINDEX would stall every writer
behind it) and is tried again later.

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
from typing import Any, Literal

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
LOCK_TIMEOUT = "2s"  # a REINDEX waits this long for its table, then is tried again later
HERE_LOCK_WAIT_S = 30.0  # "here": how long the caller waits for another rebuild to end
BACKGROUND_ATTEMPTS = 60  # "background": tries (a lock held elsewhere, a busy table)
BACKGROUND_PAUSE_S = 2.0  # between them
SETTLE_S = 10.0  # after a rebuild: how long its own pre-rebuild sessions may take to go

Repairs = Literal["here", "background", "report"]


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


def server_now(conn: Connection) -> datetime:
    row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def stale_indexes(conn: Connection) -> list[str]:
    """The bm25 indexes not rebuilt since this database server started."""
    started = server_started_at(conn)
    done = rebuilt_for(conn)
    return [index for index, _ in bm25_indexes(conn) if done.get(index) != started]


def rebuild(
    conn: Connection,
    indexes: list[str],
    reason: str,
    *,
    spare: str | None = None,
    on_rebuilt: Callable[[], None] | None = None,
) -> list[str]:
    """REINDEX each index and record it; then close the idle sessions opened before, but
    those named ``spare`` (the caller's application_name: ``on_rebuilt`` drains its own
    pools instead). A REINDEX that cannot lock its table within LOCK_TIMEOUT raises
    LockNotAvailable (the caller tries again later) rather than stall writers behind it."""
    if not indexes:
        return []
    started_at = server_started_at(conn)
    before = conn.execute("SELECT now()").fetchone()
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (LOCK_TIMEOUT,))
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
        _close_stale_sessions(conn, before[0], spare)
    if on_rebuilt is not None:
        on_rebuilt()
    return indexes


def _close_stale_sessions(conn: Connection, rebuilt_at: datetime, spare: str | None) -> None:
    """pg_textsearch 1.0.0 backends keep their per-index state across a REINDEX: close the
    idle sessions of this database that started before it (their pools reconnect), but
    the rebuilding process's own (``spare``), whose pools are drained."""
    closed = conn.execute(
        load_sql("db/close_stale_sessions.sql"), (rebuilt_at, spare or "")
    ).fetchone()
    if closed and closed[0]:
        log.info("closed %d idle sessions opened before the BM25 rebuild", closed[0])


# ------------------------------------------------------------------ the guard


class KeywordIndexGuard:
    """The keyword lane's state for one Database: rebuilt at start, probed on demand; who
    repairs is ``Repairs`` (see the module's docstring), set by :meth:`at_start`."""

    def __init__(
        self,
        admin: AdminConnection,
        *,
        rebuild_on_restart: bool = True,
        spare: str | None = None,
        on_rebuilt: Callable[[], None] | None = None,
    ) -> None:
        self._admin = admin
        self._rebuild_on_restart = rebuild_on_restart
        self._spare = spare
        self._on_rebuilt = on_rebuilt
        self._lock = threading.Lock()
        self._probing = threading.Lock()
        self._repair: threading.Thread | None = None
        self._closed = threading.Event()
        self.repairs: Repairs = "here"
        self.state = KeywordState()

    @property
    def trusted(self) -> bool:
        return self.state.trusted

    @contextmanager
    def _rebuilding(self, wait_s: float) -> Iterator[Connection | None]:
        """An admin connection holding the advisory lock (one process rebuilds at a time),
        or None when another session held it for ``wait_s``: the lock is tried, never
        waited for, so an outside session holding it cannot hang the caller."""
        with self._admin() as conn:
            deadline = time.monotonic() + wait_s
            while True:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_LOCK,)).fetchone()
                if row is not None and row[0]:
                    break
                if time.monotonic() >= deadline or self._closed.wait(0.2):
                    yield None
                    return
            try:
                yield conn
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK,))

    def at_start(self, repairs: Repairs | None = None) -> KeywordState:
        """Rebuild what this server start has not rebuilt yet, probe, repair what fails: on
        this thread (``here``), in a thread while the lane starts untrusted
        (``background``), or not at all (``report``: probe and say so)."""
        if repairs is not None:
            self.repairs = repairs
        if self.repairs == "background":
            self._start_repair("first use since the server started", restart=True)
            return self.state
        if self.repairs == "report":
            self._report()
            return self.state
        with self._rebuilding(HERE_LOCK_WAIT_S) as conn:
            if conn is None:  # another process rebuilds right now: probe what is there
                self._report(busy=True)
                return self.state
            probes, rebuilt, because = self._repair_pass(conn, restart=True)
        self._set(probes, rebuilt, because if rebuilt else None)
        return self.state

    def _repair_pass(
        self, conn: Connection, *, restart: bool
    ) -> tuple[list[IndexProbe], list[str], str | None]:
        """Rebuild the indexes stale since the server started (``restart``), probe, rebuild
        what fails, probe again: the probes, what was rebuilt and why."""
        rebuilt: list[str] = []
        because = None
        spare, on_rebuilt = self._spare, self._on_rebuilt
        since = server_now(conn)
        if restart and self._rebuild_on_restart:
            because = "first use since the server started"
            stale = stale_indexes(conn)
            rebuilt = rebuild(conn, stale, because, spare=spare, on_rebuilt=on_rebuilt)
        if rebuilt:
            self._settle(conn, since)
        probes = probe(conn)
        failed = [p.index for p in probes if not p.ok]
        if failed:
            lost = "; ".join(f"{p.index}: {p.reason}" for p in probes if not p.ok)
            because = f"probe failed ({lost})"
            rebuilt += rebuild(conn, failed, because, spare=spare, on_rebuilt=on_rebuilt)
            probes = probe(conn)
        return probes, rebuilt, because if rebuilt else None

    def _settle(self, conn: Connection, since: datetime) -> None:
        """Wait (up to SETTLE_S) until this process's sessions opened before the rebuild
        are gone (its drained pools close busy ones when they come back): what such a
        session wrote after the REINDEX is invisible to the others (#390), and the probe
        that follows, which samples the newest heap page first, must see it."""
        if self._spare is None:
            return
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline and not self._closed.is_set():
            row = conn.execute(load_sql("db/sessions_before.sql"), (self._spare, since)).fetchone()
            if not row or not row[0]:
                return
            self._closed.wait(0.1)
        log.info("BM25 rebuild: sessions opened before it still busy after %.0f s", SETTLE_S)

    def _report(self, *, busy: bool = False) -> None:
        """Probe without repairing: a stale or failing index leaves the lane untrusted and
        says who repairs it."""
        with self._admin() as conn:
            stale = stale_indexes(conn) if self._rebuild_on_restart else []
            probes = probe(conn)
        self._set(probes, [], None)
        failed = [p for p in probes if not p.ok]
        if stale or failed:
            with self._lock:
                self.state.trusted = False
            who = (
                "another process is rebuilding it"
                if busy
                else "not repaired from this command: the serving process (elephant serve) "
                "rebuilds it in the background"
            )
            what = "; ".join(
                [f"{index}: not rebuilt since the database server started" for index in stale]
                + [f"{p.index}: {p.reason}" for p in failed]
            )
            self.state.error = f"{what} ({who})"
            log.warning("BM25 keyword lane untrusted here: %s", self.state.error)

    def check(self, max_age_s: float = 60.0) -> KeywordState:
        """The state, probed again when older than ``max_age_s``; a failed probe marks the
        lane untrusted and (unless ``report``) starts a rebuild in the background."""
        checked = self.state.checked_at
        fresh = checked is not None and (datetime.now(UTC) - checked).total_seconds() < max_age_s
        if fresh or self.state.repairing:
            return self.state
        if not self._probing.acquire(blocking=False):  # another request probes right now
            return self.state
        try:
            if self.repairs == "report":
                self._report()
                return self.state
            with self._admin() as conn:
                probes = probe(conn)
        except (psycopg.Error, ElephantError) as exc:
            self.state.error = f"probe failed to run: {exc}"
            return self.state
        finally:
            self._probing.release()
        self._set(probes, self.state.rebuilt, self.state.rebuilt_because)
        if not self.state.trusted:
            failed = "; ".join(f"{p.index}: {p.reason}" for p in probes if not p.ok)
            log.warning("BM25 keyword lane untrusted (%s): search uses the tsvector lane", failed)
            self._start_repair(f"probe failed ({failed})", restart=False)
        return self.state

    def wait_for_repair(self, timeout_s: float = 120.0) -> None:
        thread = self._repair
        if thread is not None:
            thread.join(timeout_s)

    def close(self) -> None:
        """Stop a background repair waiting for its lock (the process is closing)."""
        self._closed.set()
        self.wait_for_repair(10)

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

    def _start_repair(self, reason: str, *, restart: bool) -> None:
        """Rebuild and probe in a thread; meanwhile the lane is untrusted (tsvector)."""
        with self._lock:
            if self.state.repairing:
                return
            self.state.trusted = False
            self.state.repairing = True

        def repair() -> None:
            try:
                self._repair_until_done(reason, restart=restart)
            finally:
                self.state.repairing = False

        self._repair = threading.Thread(target=repair, name="elephant-bm25-repair", daemon=True)
        self._repair.start()

    def _repair_until_done(self, reason: str, *, restart: bool) -> None:
        """Try the repair pass until it runs: the advisory lock held elsewhere or a table
        busy past LOCK_TIMEOUT only delay it (BACKGROUND_PAUSE_S, BACKGROUND_ATTEMPTS)."""
        for _ in range(BACKGROUND_ATTEMPTS):
            try:
                with self._rebuilding(BACKGROUND_PAUSE_S) as conn:
                    if conn is not None:
                        probes, rebuilt, because = self._repair_pass(conn, restart=restart)
                        self._set(probes, rebuilt, because)
                        return
            except psycopg.errors.LockNotAvailable:
                log.info("BM25 rebuild waits for its table (%s): trying again", reason)
            except (psycopg.Error, ElephantError) as exc:  # a thread: log, never die silently
                log.error("BM25 rebuild failed: %s", exc)
                self.state.error = f"rebuild failed: {exc}"
                return
            if self._closed.wait(BACKGROUND_PAUSE_S):
                return
        self.state.error = f"rebuild not done after {BACKGROUND_ATTEMPTS} tries ({reason})"
        log.error("BM25 %s", self.state.error)

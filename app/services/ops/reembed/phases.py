"""The steps of a re-embed: the set-up, then one piece of work of each phase at a time
(backfill, catch-up, index, swap, finish; see the package docstring for what each does).

Every piece is one transaction, or is detected and redone after a crash; the caller
(app/services/ops/reembed/run.py) holds the re-embed's advisory lock around it.
"""

from __future__ import annotations

import json
import logging
import re
import time
from datetime import datetime

from psycopg import sql

from app.db.resources import fragment, load_sql
from app.db.runtime import Connection
from app.errors import ConfigError
from app.services.ops.reembed import rows
from app.services.ops.reembed.embedders import EmbeddingFollower, target_embedder
from app.services.ops.reembed.rows import KEY_START, TABLES, TRIGGER_COLUMNS
from app.services.ops.reembed.state import (
    CHANNEL,
    Phase,
    ReembedStatus,
    State,
    Target,
    admin,
    ddl,
    drop_state,
    save,
)
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

_NEXT = "_next"
_WORD = re.compile(r"\bembedding\b")
_NOT_NULL_CHECK = "{table}_embedding_reembed_not_null"


# ------------------------------------------------------------------ setup


def setup(elephant: Elephant, conn: Connection, target: Target, current: ReembedStatus) -> None:
    """State table, new columns, triggers: one transaction, every statement idempotent."""
    with ddl(conn):
        conn.execute(load_sql("reembed/setup.sql"))
        conn.execute(
            sql.SQL("GRANT SELECT ON elephant_reembed TO {}").format(
                sql.Identifier(elephant.settings.database.app_role)
            )
        )
        indexes = []
        for table in TABLES:
            conn.execute(
                sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS embedding_next vector({})").format(
                    sql.Identifier(table), sql.Literal(target.dim)
                )
            )
            conn.execute(  # in the row, as embedding (migration 0014: exact scans)
                sql.SQL("ALTER TABLE {} ALTER COLUMN embedding_next SET STORAGE MAIN").format(
                    sql.Identifier(table)
                )
            )
            conn.execute(
                sql.SQL("DROP TRIGGER IF EXISTS elephant_reembed_reset ON {}").format(
                    sql.Identifier(table)
                )
            )
            conn.execute(
                sql.SQL(fragment("reembed/reset_trigger.sql")).format(
                    columns=sql.SQL(", ").join(map(sql.Identifier, TRIGGER_COLUMNS[table])),
                    table=sql.Identifier(table),
                )
            )
            indexes.extend(_vector_indexes(conn, table))
        conn.execute(
            load_sql("reembed/begin.sql"),
            (target.to_json(), current.model, current.dim, json.dumps(indexes)),
        )
        conn.execute("SELECT pg_notify(%s, 'started')", (CHANNEL,))


def _vector_indexes(conn: Connection, table: str) -> list[dict[str, str]]:
    """Every index that reads ``embedding`` (as a column, in an expression or in a partial
    index's predicate), with the statement that builds its twin on ``embedding_next``."""
    found = []
    for name, definition in conn.execute(load_sql("reembed/vector_indexes.sql"), (table,)):
        match = re.match(r"CREATE (UNIQUE )?INDEX (\S+) ON (.*)$", definition, re.DOTALL)
        if match is None or len(name) + len(_NEXT) > 63:
            raise ConfigError(f"cannot rebuild index {name} for the new vectors: {definition}")
        twin = f"{name}{_NEXT}"
        # The rest of the definition is the server's own text (pg_get_indexdef), with the
        # column renamed: it is kept as SQL, never quoted as a value.
        statement = sql.SQL("CREATE {unique}INDEX CONCURRENTLY {twin} ON {rest}").format(
            unique=sql.SQL("UNIQUE " if match.group(1) else ""),
            twin=sql.Identifier(twin),
            rest=sql.SQL(_WORD.sub("embedding_next", match.group(3))),
        )
        found.append(
            {"table": table, "name": name, "next": twin, "create": statement.as_string(conn)}
        )
    return found


# ------------------------------------------------------------------ the work


def advance(
    elephant: Elephant, conn: Connection, state: State, batch: int, settle_s: float
) -> Phase:
    """One piece of work of the current phase; returns the phase after it."""
    if state.phase == "backfill":
        return _backfill(elephant, conn, state, batch)
    if state.phase == "catchup":
        if _catch_up(elephant, conn, state, batch) < batch:  # the rest: in the swap phase
            with conn.transaction():
                save(conn, phase="index")
            return "index"
        return "catchup"
    if state.phase == "index":
        if _build_next_index(conn, state):
            return "index"
        with conn.transaction():
            save(conn, phase="swap")
        return "swap"
    if state.phase == "swap":
        if _catch_up(elephant, conn, state, batch) >= batch:
            return "swap"  # writes keep coming: catch up before taking the locks
        _swap(elephant, conn, state, batch)
        return "finish"
    if state.phase == "finish":
        if state.swapped_at is not None and _settling(conn, state.swapped_at, settle_s):
            return "finish"
        _finish(elephant, conn, state, batch)
        return "done"
    raise ConfigError(f"elephant_reembed is in an unknown phase {state.phase!r}")


def _backfill(elephant: Elephant, conn: Connection, state: State, batch: int) -> Phase:
    """The next batch in id order; when every table is through, on to the catch-up."""
    embedder = target_embedder(elephant, state.target)
    cursors = dict(state.cursors)
    for table in TABLES:
        cursor = cursors.get(table, KEY_START[table])
        if cursor is None:  # this table is through
            continue
        found = conn.execute(rows.select_rows(table, rows.after(table)), (cursor, batch)).fetchall()
        cursors[table] = found[-1][0] if len(found) == batch else None
        rows.write(
            conn,
            table,
            embedder,
            found,
            also=lambda: save(conn, cursors=cursors),
            settings=elephant.settings.embedding,
        )
        if found:
            return "backfill"
    with conn.transaction():
        save(conn, phase="catchup")
    return "catchup"


def _catch_up(elephant: Elephant, conn: Connection, state: State, batch: int) -> int:
    """Up to ``batch`` rows of each table still without a new vector; the most any table
    had (``batch``: more may be waiting)."""
    embedder = target_embedder(elephant, state.target)
    found = 0
    for table in TABLES:
        missing = rows.missing(conn, table, batch)
        found = max(found, len(missing))
        rows.write(conn, table, embedder, missing, settings=elephant.settings.embedding)
    return found


def _build_next_index(conn: Connection, state: State) -> bool:
    """Build one missing twin index (CONCURRENTLY: reads and writes go on); False when all
    are built. An invalid one (an interrupted build) is dropped and built again."""
    for index in state.indexes:
        row = conn.execute(load_sql("reembed/index_valid.sql"), (index["next"],)).fetchone()
        if row is not None and row[0]:
            continue
        twin = sql.Identifier(index["next"])
        if row is not None:
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(twin))
        log.info("re-embed: building %s", index["next"])
        # Built at the start from the server's own index definition (_vector_indexes).
        conn.execute(index["create"].encode())
        return True
    return False


def _swap(elephant: Elephant, conn: Connection, state: State, batch: int) -> None:
    """The one short transaction: last rows, columns and indexes into place, the new model
    recorded, every follower told (the NOTIFY is delivered at commit)."""
    embedder = target_embedder(elephant, state.target)
    with ddl(conn):
        conn.execute(
            "LOCK TABLE memories, facts, passages IN ACCESS EXCLUSIVE MODE"
        )  # writers wait from here to the commit; the rest is quick
        # everything written before the lock, and not yet caught up
        for table in TABLES:
            while missing := rows.missing(conn, table, batch):
                rows.write(
                    conn,
                    table,
                    embedder,
                    missing,
                    check_version=False,
                    settings=elephant.settings.embedding,
                )
        marker = conn.execute(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, now()"
        ).fetchone()
        assert marker is not None
        for table in TABLES:
            ident = sql.Identifier(table)
            comment = conn.execute(
                load_sql("reembed/column_comment.sql"), (table, table)
            ).fetchone()
            conn.execute(
                sql.SQL("DROP TRIGGER IF EXISTS elephant_reembed_reset ON {}").format(ident)
            )
            conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN embedding").format(ident))
            conn.execute(
                sql.SQL("ALTER TABLE {} RENAME COLUMN embedding_next TO embedding").format(ident)
            )
            if comment and comment[0]:
                conn.execute(
                    sql.SQL("COMMENT ON COLUMN {}.embedding IS {}").format(
                        ident, sql.Literal(comment[0])
                    )
                )
            if table == "passages":  # NOT NULL again, without a scan under this lock
                conn.execute(
                    sql.SQL(
                        "ALTER TABLE {} ADD CONSTRAINT {} CHECK (embedding IS NOT NULL) NOT VALID"
                    ).format(ident, sql.Identifier(_NOT_NULL_CHECK.format(table=table)))
                )
        for index in state.indexes:
            conn.execute(
                sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                    sql.Identifier(index["next"]), sql.Identifier(index["name"])
                )
            )
        conn.execute(
            "UPDATE elephant_meta SET embedding_model = %s, embedding_dim = %s, updated_at = now()",
            (state.target.model, state.target.dim),
        )
        save(conn, phase="finish", swap_xid=str(marker[0]), swapped_at=marker[1])
        conn.execute("SELECT pg_notify(%s, 'swapped')", (CHANNEL,))
    log.info("re-embed: swapped to %s (%s-d)", state.target.model, state.target.dim)
    follower = elephant.embedder
    if isinstance(follower, EmbeddingFollower):
        follower.adopt(embedder)


def _settling(conn: Connection, swapped_at: datetime, settle_s: float) -> bool:
    row = conn.execute(
        "SELECT now() < %s + make_interval(secs => %s)", (swapped_at, settle_s)
    ).fetchone()
    return bool(row and row[0])


def wait_for_settle(elephant: Elephant, swapped_at: datetime, settle_s: float) -> None:
    with admin(elephant) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM %s + make_interval(secs => %s) - now())",
            (swapped_at, settle_s),
        ).fetchone()
    left = float(row[0]) if row and row[0] is not None else 0.0
    if left > 0:
        time.sleep(min(left, settle_s))


def _finish(elephant: Elephant, conn: Connection, state: State, batch: int) -> None:
    """Rows written since the swap (by any process) embedded again with the new model,
    passages' NOT NULL restored, the trigger function and the state dropped."""
    embedder = target_embedder(elephant, state.target)
    # xid of the oldest transaction running at the swap, as a 32-bit xid: every row
    # written after the swap has an xmin at or after it (age() compares wrap-safely)
    xid = str(int(state.swap_xid or "0") % 2**32)
    for table in TABLES:
        since_swap = sql.SQL("SELECT id::text FROM {} WHERE age(xmin) <= age(%s::xid)")
        ids = [
            str(row[0])
            for row in conn.execute(since_swap.format(sql.Identifier(table)), (xid,)).fetchall()
        ]
        for first in range(0, len(ids), batch):
            found = conn.execute(
                rows.select_rows(table, rows.with_ids(table)), (ids[first : first + batch],)
            ).fetchall()
            rows.write(
                conn,
                table,
                embedder,
                found,
                column="embedding",
                check_version=False,
                settings=elephant.settings.embedding,
            )
        if ids:
            log.info("re-embed: %s %s written around the swap embedded again", len(ids), table)
    check = sql.Identifier(_NOT_NULL_CHECK.format(table="passages"))
    exists = conn.execute(
        "SELECT 1 FROM pg_constraint WHERE conname = %s AND conrelid = 'passages'::regclass",
        (_NOT_NULL_CHECK.format(table="passages"),),
    ).fetchone()
    if exists:
        conn.execute(sql.SQL("ALTER TABLE passages VALIDATE CONSTRAINT {}").format(check))
    with ddl(conn):
        conn.execute("ALTER TABLE passages ALTER COLUMN embedding SET NOT NULL")
        conn.execute(sql.SQL("ALTER TABLE passages DROP CONSTRAINT IF EXISTS {}").format(check))
        drop_state(conn)
        conn.execute("SELECT pg_notify(%s, 'done')", (CHANNEL,))
    log.info("re-embed to %s (%s-d) finished", state.target.model, state.target.dim)

"""The backfill job: what should be stored but is not yet, filled in.

The backfills that exist: vectors of memories and facts stored while the embedder was
down, and passages of turns and long notes stored without them (the embedder was
down, or they predate passages: migration 0007). The queue's ``embed_memories`` job
does the same one batch at a time when commit notices the embedder is back; this job
sweeps whatever is left, up to ``BATCHES`` batches per run, on the schedule or on
``elephant maintain backfill``.
"""

from __future__ import annotations

from psycopg import sql

from app.db.resources import fragment, load_sql
from app.db.runtime import Connection
from app.services.lifecycle.report import Report
from app.services.memory import passages
from app.services.memory.window_vectors import stored_vectors
from app.services.ops import metrics
from app.services.runtime import Elephant

BATCH = 500
BATCHES = 20
# table -> the text its vector is made from, as on the write paths (commit embeds a
# memory's text, extraction a fact's text), so a backfilled vector equals a fresh one
_EMBEDDED = {"memories": "text", "facts": "text"}


def _missing(conn: Connection, tenant: str) -> dict[str, int]:
    row = conn.execute(load_sql("lifecycle/backfill_missing.sql"), {"tenant": tenant}).fetchone()
    values = [int(value) for value in row] if row else [0, 0, 0]
    return dict(zip(("memory_vectors", "fact_vectors", "turn_passages"), values, strict=True))


def fill_vectors(elephant: Elephant, conn: Connection, tenant: str, limit: int) -> tuple[int, bool]:
    """Vectors for up to ``limit`` memories and ``limit`` facts; (written, a batch was full)."""
    written, full = 0, False
    for table, text in _EMBEDDED.items():
        rows = conn.execute(
            sql.SQL(fragment("lifecycle/backfill_unembedded.sql")).format(
                table=sql.Identifier(table), text=sql.Identifier(text)
            ),
            (tenant, limit),
        ).fetchall()
        if not rows:
            continue
        with metrics.embedding("document", len(rows)):
            if table == "memories":  # windows pooled from their turns, as the commit does
                vectors = stored_vectors(
                    conn, elephant.settings.embedding, elephant.embedder, list(rows)
                )
            else:
                vectors = elephant.embedder.embed_documents([str(value) for _, value in rows])
        with conn.cursor() as cursor:
            cursor.executemany(
                sql.SQL("UPDATE {} SET embedding = %s WHERE tenant_id = %s AND id = %s").format(
                    sql.Identifier(table)
                ),
                [
                    (vector, tenant, row_id)
                    for (row_id, _), vector in zip(rows, vectors, strict=True)
                ],
            )
        written += len(rows)
        full = full or len(rows) == limit
    return written, full


def fill_passages(
    elephant: Elephant, conn: Connection, tenant: str, limit: int
) -> passages.Backfilled:
    """Passages for up to ``limit`` turns and ``limit`` long notes without them, embedded
    by this Elephant's embedder (the job, its queued batches, and an import)."""
    return passages.backfill(
        conn,
        tenant,
        elephant.embedder.embed_documents,
        elephant.settings.embedding.passage_words,
        limit=limit,
    )


def run(elephant: Elephant, conn: Connection, tenant: str, *, dry_run: bool) -> Report:
    before = _missing(conn, tenant)
    report = Report("backfill", tenant, dry_run, detail={"missing_before": before})
    if dry_run:
        report.counts = dict(before)
        return report
    vectors = passages_written = 0
    more = True
    for _ in range(BATCHES):
        filled = fill_passages(elephant, conn, tenant, BATCH)  # first: windows pool them
        written, full = fill_vectors(elephant, conn, tenant, BATCH)
        vectors += written
        passages_written += filled.written
        more = full or filled.full
        if not more:
            break
    report.counts = {"vectors": vectors, "passages": passages_written}
    report.more = more
    report.detail["missing_after"] = _missing(conn, tenant)
    return report

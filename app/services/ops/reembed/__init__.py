"""Re-embed every vector to a new embedding model with no downtime.

The new vectors are built beside the old ones and swapped in at the end; search keeps
answering with the old model until the swap, and with the new one right after it.

Phases (one row in ``elephant_reembed``, sql/reembed/setup.sql, while a re-embed runs):

1. ``start``: the target model is built and probed (a bad name or dimension fails here,
   before any DDL); ``embedding_next vector(D)`` is added to memories, facts and passages
   (a catalog-only change), with a trigger that clears a row's new vector when its text
   or old vector changes afterwards.
2. ``backfill``: batches in id order (a keyset cursor per table, committed with each
   batch, so a crash or kill loses at most the batch in flight). A row changed while its
   batch was being embedded is skipped (its ``xmin`` moved) and left to the catch-up.
3. ``catchup``: rows still without a new vector: written during the backfill, or changed.
4. ``index``: every index on ``embedding`` (HNSW, same opclass, options and predicate) is
   built again on ``embedding_next`` with CREATE INDEX CONCURRENTLY (an interrupted build
   leaves an invalid index, dropped and rebuilt on resume).
5. ``swap``: once the rows left are fewer than a batch, one short transaction locks the
   three tables, embeds the last few rows, drops the old columns (their indexes go with
   them), renames the new ones and their indexes into place, copies the column comments,
   records the new model in ``elephant_meta`` and notifies every process (``NOTIFY
   elephant_embedding``) so those that follow the database switch models at once.
6. ``finish`` (after ``SETTLE_S``): rows written since the swap are embedded again, in
   case a process that had not switched yet wrote an old-model vector; passages get their
   NOT NULL back (through a validated CHECK, so no table scan under a lock); the trigger
   function and the state table are dropped.

The old vectors are dropped at the swap, not kept: a re-embed back to the old model is the
way back. Dropped columns keep their bytes in the rows until the rows are rewritten
(VACUUM FULL or pg_repack reclaims them at once).

Running processes learn of the swap through :class:`EmbeddingFollower` (``follow``), which
listens for the notification, preloads the target model while the backfill runs, and
switches when the database says so. A process started later reads embedding.model: set it
(and embedding.dim) to the new model after the swap; doctor says so until it is done.

The work reads every tenant's rows, so the migrator connection must bypass row-level
security (a superuser, as embedded, or a role with BYPASSRLS).

The package: ``run`` (the entry points), ``phases`` (the set-up and each phase's piece of
work), ``rows`` (what is re-embedded: tables, rows, texts, writes), ``embedders`` (the
target model and the follower), ``state`` (the state row, the status, locks). The
statements are in sql/reembed/.
"""

from __future__ import annotations

from app.services.ops.reembed.embedders import (
    EmbeddingFollower,
    cache_target,
    follow,
    target_embedder,
)
from app.services.ops.reembed.rows import TABLES, select_rows, texts_of
from app.services.ops.reembed.run import cancel, run, start, status, step
from app.services.ops.reembed.state import (
    BATCH,
    CHANNEL,
    LOCK_TIMEOUT,
    SETTLE_S,
    Phase,
    ReembedStatus,
    TableProgress,
    Target,
)

__all__ = [
    "BATCH",
    "CHANNEL",
    "LOCK_TIMEOUT",
    "SETTLE_S",
    "TABLES",
    "EmbeddingFollower",
    "Phase",
    "ReembedStatus",
    "TableProgress",
    "Target",
    "cancel",
    "follow",
    "run",
    "start",
    "status",
    "step",
    "target_embedder",
]

# The rows a re-embed reads and their texts, and the target model's cache: the tests
# read them under the names they had when the package was one module.
_select = select_rows
_texts = texts_of
_cache_target = cache_target

"""The embedders of a re-embed: the target model, built and probed once per process,
and :class:`EmbeddingFollower`, which makes a running process embed with whatever model
the database's vectors are from (``follow``).

A follower listens on the ``elephant_embedding`` channel, preloads the target model while
the backfill runs, and switches when the swap commits; a process started later reads
embedding.model (doctor says to set it to the new model after the swap).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from pydantic import ValidationError

from app.config import EmbeddingSettings
from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ConfigError, ElephantError, InvalidInput
from app.providers.embedder import Embedder, Vectors, build_embedder_for
from app.services.ops.reembed.state import CHANNEL, Target, read_state
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

# ------------------------------------------------------------------ the target model

_TARGETS: dict[Target, Embedder] = {}
_TARGETS_LOCK = threading.Lock()
# At most one sync a second driven by notifications, however many arrive.
NOTIFY_GAP_S = 1.0


def build(base: EmbeddingSettings, target: Target, dim: int | None) -> Embedder:
    """The target embedder, probed: every way it cannot work is InvalidInput."""
    changes: dict[str, object] = {
        "provider": target.provider,
        "query_prefix": target.query_prefix,
        "document_prefix": target.document_prefix,
    }
    try:
        embedder = build_embedder_for(base, target.model, dim, **changes)
        probe = embedder.embed_documents(["re-embed probe"])
    except ValidationError as exc:
        raise InvalidInput.from_validation(exc) from None
    except (ConfigError, ElephantError) as exc:
        raise InvalidInput(f"model: {exc.message}") from None
    except OSError as exc:  # transformers cannot read the directory
        raise InvalidInput(f"model: {target.model!r} cannot be loaded: {exc}") from None
    if probe.shape != (1, embedder.dim) or (dim is not None and embedder.dim != dim):
        raise InvalidInput(
            f"dimensions: {target.model} produces {probe.shape[-1]}-d vectors, not {dim}"
        )
    return embedder


def cache_target(target: Target, embedder: Embedder) -> None:
    with _TARGETS_LOCK:
        _TARGETS.clear()  # one target at a time: drop a cancelled one's model
        _TARGETS[target] = embedder


def target_embedder(elephant: Elephant, target: Target) -> Embedder:
    """The target model, built once per process (a follower's preloaded one if it has it)."""
    embedder = elephant.embedder
    if isinstance(embedder, EmbeddingFollower):
        preloaded = embedder.preloaded(target)
        if preloaded is not None:
            return preloaded
    with _TARGETS_LOCK:
        found = _TARGETS.get(target)
    if found is None:
        found = build(elephant.settings.embedding, target, target.dim)
        cache_target(target, found)
    return found


# ------------------------------------------------------------------ following the database


class EmbeddingFollower:
    """An Embedder that embeds with the model the database's vectors are from.

    It wraps the configured embedder; a background thread listens on the
    ``elephant_embedding`` channel (and looks every ``poll_s`` in case a notification was
    lost while it reconnected): while a re-embed runs it preloads the target model, and
    when the swap commits it switches to it, so searches use the old model until the swap
    and the new one after it. ``stop`` ends the thread (the runtime calls it on close).
    """

    def __init__(self, elephant: Elephant, current: Embedder, *, poll_s: float = 30.0) -> None:
        self._elephant = elephant
        self._active = current
        self.model_name = current.model_name
        self.dim = current.dim
        self._preloaded: tuple[Target, Embedder] | None = None
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._listen, name="elephant-embedding-follower", daemon=True
        )

    def __getattr__(self, name: str) -> Any:
        """What else the embedder offers (``warm_up``, ``loaded``...) is the active one's."""
        if name == "_active":
            raise AttributeError(name)
        return getattr(self._active, name)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._active.embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._active.embed_queries(texts)

    @property
    def active(self) -> Embedder:
        """The embedder in use now."""
        return self._active

    def preloaded(self, target: Target) -> Embedder | None:
        found = self._preloaded
        return found[1] if found is not None and found[0] == target else None

    def adopt(self, embedder: Embedder) -> None:
        """Embed with ``embedder`` from now on (the swap committed)."""
        with self._lock:
            if self._active is not embedder:
                log.info("embedding with %s (%s-d) from now on", embedder.model_name, embedder.dim)
            self._active = embedder
            self.model_name, self.dim = embedder.model_name, embedder.dim
            self._preloaded = None

    def start(self) -> None:
        """Check the database's model now (a process started after a swap, with the old
        model configured, must not embed with it); preloading happens in the thread."""
        with self._elephant.db.connection() as conn:
            self.sync(conn, preload=False)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2.0)

    def sync(self, conn: Connection, *, preload: bool = True) -> None:
        """Read the database's model and the re-embed in progress; switch or preload."""
        meta = conn.execute("SELECT embedding_model, embedding_dim FROM elephant_meta").fetchone()
        if meta is None:
            return
        model, dim = str(meta[0]), int(meta[1])
        state = read_state(conn)
        if (model, dim) != (self._active.model_name, self._active.dim):
            if state is not None and (state.target.model, state.target.dim) == (model, dim):
                self.adopt(
                    self.preloaded(state.target) or target_embedder(self._elephant, state.target)
                )
            else:
                log.warning(
                    "the vectors are %s (%s-d) but embedding.model is %s (%s-d): embedding "
                    "with %s; set embedding.model and embedding.dim to it",
                    model, dim, self._active.model_name, self._active.dim, model,
                )  # fmt: skip
                self.adopt(build_embedder_for(self._elephant.settings.embedding, model, dim))
        elif state is not None and state.phase != "finish":
            if preload and self.preloaded(state.target) is None:
                embedder = target_embedder(self._elephant, state.target)
                with self._lock:
                    self._preloaded = (state.target, embedder)
        elif state is None:
            self._preloaded = None

    def _listen(self) -> None:
        """LISTEN on a connection of its own (a session: never through a transaction
        pooler); sync every poll_s and soon after a notification of the migrator."""
        while not self._stop.is_set():
            try:
                conninfo = self._elephant.db.session_conninfo()
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
                    last, woken = 0.0, False
                    while not self._stop.is_set():
                        since = time.monotonic() - last
                        if since >= self._poll_s or (woken and since >= NOTIFY_GAP_S):
                            self.sync(conn)
                            last, woken = time.monotonic(), False
                        # Read the senders first: the connection is busy while notifies runs.
                        senders = [n.pid for n in conn.notifies(timeout=0.5, stop_after=1)]
                        woken = woken or any(self._wakes(conn, pid) for pid in senders)
            except (ElephantError, psycopg.Error) as exc:
                log.warning("embedding follower: %s", getattr(exc, "message", exc))
                self._stop.wait(min(self._poll_s, 5.0))

    def _wakes(self, conn: Connection, sender: int) -> bool:
        """Whether a notification may wake the follower: any role can NOTIFY the channel
        (an analyst too), so only a sender that may write elephant_meta (the migrator,
        whose re-embed notifies) or one already gone counts; the wake-ups are also
        spaced NOTIFY_GAP_S apart (above). Others wait for the next poll."""
        row = conn.execute(load_sql("reembed/notify_sender.sql"), {"pid": sender}).fetchone()
        return row is None or bool(row[0])


def follow(elephant: Elephant, *, poll_s: float = 30.0) -> EmbeddingFollower:
    """Make ``elephant`` embed with whatever model the database's vectors are from, now and
    after a re-embed swaps models while it runs (see EmbeddingFollower)."""
    current = elephant.embedder
    if isinstance(current, EmbeddingFollower):
        return current
    follower = EmbeddingFollower(elephant, current, poll_s=poll_s)
    follower.start()
    elephant.embedder = follower
    elephant.stop_on_close(follower)
    return follower

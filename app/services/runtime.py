"""The running Elephant: settings, database, embedder and LLM, built once and shared.

The API, the MCP adapter and the CLI each hold one of these and call the service
functions with it; nothing here is created at import time. Background threads (the
job worker, app/services/jobs/worker.py) are started by whoever starts the application
and handed to ``stop_on_close``; the runtime knows them only as things to stop.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from app.config import Settings
from app.db import Database
from app.db.keyword_index import Repairs
from app.db.tenant_indexes import WayCache
from app.errors import DatabaseUnavailable
from app.providers.embedder import Embedder, build_embedder
from app.providers.llm import LLM, build_llm
from app.providers.reranker import HTTPReranker, build_reranker
from app.services.graph.backend import Backend, GraphDecision, build, decide
from app.services.graph.store import GraphStore
from app.services.jobs.leases import LeaseKeeper
from app.services.retrieval.access_stats import AccessRecorder
from app.services.retrieval.decomposition import LLMSubQueries
from app.services.retrieval.expansion import NameCache

log = logging.getLogger(__name__)


class Stoppable(Protocol):
    """A background task of this process (the job worker) that ends when asked."""

    def stop(self) -> None: ...


class Elephant:
    # A plain class, not a dataclass: Litestar would try to validate a dataclass
    # dependency field by field.
    def __init__(
        self, *, settings: Settings, db: Database, embedder: Embedder, llm: LLM | None
    ) -> None:
        self.settings = settings
        self.db = db
        self.embedder = embedder
        self.llm = llm
        self._background: list[Stoppable] = []
        self.access = AccessRecorder(db, settings.lifecycle.access_flush_seconds)
        self.vector_ways = WayCache(settings.search.vector_way_cache_s)
        self.names = NameCache()
        self.sub_queries = LLMSubQueries()
        self.reranker: HTTPReranker | None = build_reranker(settings.reranker)
        self.leases = LeaseKeeper(db)
        self._graph_decision: GraphDecision | None = None
        self._graph_stores: dict[Backend, GraphStore] = {}
        self._graph_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        db: Database | None = None,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        use_llm_from_settings: bool = True,
        keyword_repairs: Repairs = "here",
    ) -> Elephant:
        """Open the database (unless given; ``keyword_repairs``: who repairs its BM25
        indexes, app/db/keyword_index.py) and build the providers the settings name."""
        database = db or Database(settings, keyword_repairs=keyword_repairs)
        if db is None:
            database.open()
        if llm is None and use_llm_from_settings:
            llm = build_llm(settings.llm)
        return cls(
            settings=settings,
            db=database,
            embedder=embedder or build_embedder(settings.embedding),
            llm=llm,
        )

    @property
    def graph_decision(self) -> GraphDecision:
        """The graph backend of this process (app/services/graph/backend.py), decided once,
        when first asked: by then the database is open and its capabilities are known."""
        if self._graph_decision is None:
            try:
                decision = decide(self.settings.graph, self.db.capabilities)
            except ValueError:
                raise DatabaseUnavailable(
                    "the database is not open: the graph backend is chosen from its capabilities"
                ) from None
            with self._graph_lock:
                if self._graph_decision is None:
                    log.info("knowledge graph: %s (%s)", decision.backend, decision.reason)
                    self._graph_decision = decision
        return self._graph_decision

    @property
    def graph(self) -> GraphStore | None:
        """The graph store in use; None when there is no graph (``graph_decision.reason``)."""
        backend = self.graph_decision.backend
        return None if backend is None else self.graph_store(backend)

    def graph_store(self, backend: Backend) -> GraphStore:
        """One store per backend and runtime (the AGE store remembers provisioned graphs);
        erasure and ``elephant graph migrate`` also reach the backend not in use."""
        with self._graph_lock:
            store = self._graph_stores.get(backend)
            if store is None:
                store = self._graph_stores[backend] = build(backend, self.db)
            return store

    def stop_on_close(self, task: Stoppable) -> None:
        """Stop ``task`` when the providers close, before unfinished jobs are handed back."""
        self._background.append(task)

    def close(self) -> None:
        self.close_providers()
        self.db.close()

    def close_providers(self) -> None:
        """Stop the worker and release HTTP clients and threads; the database stays open."""
        while self._background:
            self._background.pop().stop()
        self.leases.close()
        self.access.close()
        if self.reranker is not None:
            self.reranker.close()

    @property
    def scorer_name(self) -> str:
        return "offline" if self.llm is None else f"{self.llm.provider}:{self.llm.model}"

"""The running Elephant: settings, database, embedder and LLM, built once and shared.

The API, the MCP adapter and the CLI each hold one of these and call the service
functions with it; nothing here is created at import time.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder, build_embedder
from app.providers.llm import LLM
from app.providers.reranker import HTTPReranker, build_reranker
from app.services.access import AccessRecorder
from app.services.graph.age import AGEGraphStore
from app.services.leases import LeaseKeeper

if TYPE_CHECKING:
    from app.services.worker import Worker

log = logging.getLogger(__name__)


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
        self.worker: Worker | None = None
        self.access = AccessRecorder(db)
        self.reranker: HTTPReranker | None = build_reranker(settings.reranker)
        self.graph = AGEGraphStore(db)
        self.leases = LeaseKeeper(db)

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        db: Database | None = None,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        use_llm_from_settings: bool = True,
    ) -> Elephant:
        """Open the database (unless given) and build the providers the settings name."""
        database = db or Database(settings)
        if db is None:
            database.open()
        if llm is None and use_llm_from_settings:
            from app.providers.llm import build_llm

            llm = build_llm(settings.llm)
        return cls(
            settings=settings,
            db=database,
            embedder=embedder or build_embedder(settings.embedding),
            llm=llm,
        )

    def start_worker(self) -> None:
        """Drain the job queue in a background thread of this process."""
        from app.services.worker import Worker

        if self.worker is None:
            self.worker = Worker(self)
            self.worker.start()

    def close(self) -> None:
        self.close_providers()
        self.db.close()

    def close_providers(self) -> None:
        """Stop the worker and release HTTP clients and threads; the database stays open."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        self.leases.close()
        self.access.close()
        if self.reranker is not None:
            self.reranker.close()

    @property
    def scorer_name(self) -> str:
        return "offline" if self.llm is None else f"{self.llm.provider}:{self.llm.model}"

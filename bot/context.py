"""The composition root: the long-lived resources built from settings once (clock, store, the polite arXiv
client, the topic index), the intake every paper is stored through, and the services built on them.

The CLI and the Discord bot both build them here, so a poll from the terminal and a poll inside the bot run
exactly the same code. Cogs and the CLI get the services; the raw parts stay here, for the pipeline (polling,
backfill, delivery) that this module builds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from bot.backfill import Backfill, Progress
from bot.clock import Clock, SystemClock
from bot.config import Settings
from bot.delivery import DeliveryWorker, Poster
from bot.ingest import Ingestor
from bot.intake import Intake
from bot.services import Services
from bot.sources.arxiv_api import ArxivClient
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.store import Store, open_store
from bot.topics.catalog import CatalogTopic, load_catalog
from bot.topics.index import TopicIndex
from bot.topics.relevance import DEFAULT_LABELS, load_labels
from bot.topics.scorer_training import LearnedScorer, scorer_folder


@dataclass
class AppContext:
    settings: Settings
    clock: Clock
    services: Services
    intake: Intake  # the one write path for papers (tests store papers through it too)
    _store: Store = field(repr=False)
    _arxiv: ArxivClient = field(repr=False)

    @property
    def arxiv_requests_sent(self) -> int:
        """Requests sent to arXiv since start (each after the polite interval)."""
        return self._arxiv.http.requests_sent

    def ingestor(self) -> Ingestor:
        return Ingestor(
            self._store,
            self._arxiv,
            self.clock,
            intake=self.intake,
            categories=self.settings.arxiv_categories,
            page_size=self.settings.arxiv_page_size,
            overlap=timedelta(hours=self.settings.poll_overlap_hours),
        )

    def backfill(
        self,
        categories: tuple[str, ...] | None = None,
        progress: Callable[[Progress], None] | None = None,
    ) -> Backfill:
        return Backfill(
            self._store,
            self._arxiv,
            self.clock,
            intake=self.intake,
            categories=categories or self.settings.arxiv_categories,
            progress=progress,
        )

    def learned_scorer(self) -> LearnedScorer:
        """The topics' learned scorer, kept beside the database (not loaded: call its start())."""
        catalog = load_catalog()
        return LearnedScorer(
            self._store,
            scorer_folder(self.settings.database_path),
            catalog=catalog,
            labels=load_labels(DEFAULT_LABELS, catalog),
        )

    def delivery_worker(self, poster: Poster, **options: Any) -> DeliveryWorker:
        """The outbox worker posting through `poster` (options: see DeliveryWorker)."""
        return DeliveryWorker(self._store, poster, self.clock, **options)


@asynccontextmanager
async def open_context(
    settings: Settings, clock: Clock | None = None, *, extra_topics: Sequence[CatalogTopic] = ()
) -> AsyncIterator[AppContext]:
    """Everything the bot and the CLI run on; `extra_topics` join the catalog (the demo's topic)."""
    clock = clock or SystemClock()
    store = await open_store(settings.database_path, clock)
    http = build_http_client(settings.user_agent)
    polite = PoliteHttp(http, clock, min_interval=settings.arxiv_min_interval_seconds)
    try:
        index = TopicIndex(store, clock)
        await index.start([*load_catalog(), *extra_topics])
        arxiv = ArxivClient(polite, settings.arxiv_api_url)
        intake = Intake(store, index, clock)
        services = Services.build(
            store=store, index=index, arxiv=arxiv, intake=intake, clock=clock, settings=settings
        )
        yield AppContext(settings, clock, services, intake, store, arxiv)
    finally:
        await http.aclose()
        await store.close()


__all__ = ["AppContext", "Progress", "open_context"]

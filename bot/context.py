"""The long-lived resources built from settings once: clock, store, the polite arXiv HTTP client, the ingestor.

The CLI and the Discord bot both build them here, so a poll from the terminal and a poll inside the bot run
exactly the same code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

import httpx

from bot.backfill import Backfill, Progress
from bot.clock import Clock, SystemClock
from bot.config import Settings
from bot.delivery import enqueue_for_new_papers
from bot.ingest import Ingestor
from bot.models import Paper, UpsertResult
from bot.momentum import Momentum, topic_momentum
from bot.sources.arxiv_api import ArxivClient
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.store import Store, TopicRow, open_store
from bot.topics.catalog import load_catalog
from bot.topics.service import TopicService


@dataclass
class AppContext:
    settings: Settings
    clock: Clock
    store: Store
    http: httpx.AsyncClient
    arxiv_http: PoliteHttp
    arxiv: ArxivClient
    topics: TopicService

    async def on_ingested(self, result: UpsertResult, papers: Sequence[Paper]) -> None:
        """Inside each polled page's transaction: match topics, then queue posts for followed matches."""
        matches = await self.topics.on_stored(result, papers)
        await enqueue_for_new_papers(self.store, self.clock, result, matches)

    async def momentum(self, topic: TopicRow, weeks: int = 4) -> Momentum:
        """A topic's momentum now; its share is of the categories its query names, else of all watched ones."""
        return await topic_momentum(
            self.store,
            topic,
            now=self.clock.now(),
            watched=self.settings.arxiv_categories,
            weeks=weeks,
            topic_categories=await self.topics.stored_categories(self.topics.query(topic.id)) or (),
        )

    def ingestor(self) -> Ingestor:
        return Ingestor(
            self.store,
            self.arxiv,
            self.clock,
            categories=self.settings.arxiv_categories,
            page_size=self.settings.arxiv_page_size,
            overlap=timedelta(hours=self.settings.poll_overlap_hours),
            on_stored=self.on_ingested,
            on_history=self.topics.on_stored,  # the first poll of a source: match, never post
        )

    def backfill(
        self,
        categories: tuple[str, ...] | None = None,
        progress: Callable[[Progress], None] | None = None,
    ) -> Backfill:
        return Backfill(
            self.store,
            self.arxiv,
            self.clock,
            categories=categories or self.settings.arxiv_categories,
            on_stored=self.topics.on_stored,  # history is matched, never posted
            progress=progress,
        )


@asynccontextmanager
async def open_context(settings: Settings, clock: Clock | None = None) -> AsyncIterator[AppContext]:
    clock = clock or SystemClock()
    store = await open_store(settings.database_path, clock)
    http = build_http_client(settings.user_agent)
    polite = PoliteHttp(http, clock, min_interval=settings.arxiv_min_interval_seconds)
    try:
        topics = TopicService(store, clock)
        await topics.start(load_catalog())
        yield AppContext(
            settings,
            clock,
            store,
            http,
            polite,
            ArxivClient(polite, settings.arxiv_api_url),
            topics,
        )
    finally:
        await http.aclose()
        await store.close()


__all__ = ["AppContext", "Progress", "open_context"]

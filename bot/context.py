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

import httpx

from bot.announcements import AnnouncementCycle
from bot.ask.llm import ChatModel
from bot.backfill import Backfill, Progress
from bot.clock import Clock, SystemClock
from bot.config import Settings, contact_problem, is_loopback_url
from bot.delivery import DeliveryWorker, Poster
from bot.ingest import Ingestor
from bot.intake import Intake
from bot.services import Services
from bot.sources.api_source import ArxivApiSource
from bot.sources.arxiv_api import ArxivClient
from bot.sources.feeds import FeedReader
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.sources.rss_source import ArxivRssSource
from bot.store import Store, open_store
from bot.store.protocol import ProcessLock
from bot.topics.catalog import CatalogTopic, load_catalog
from bot.topics.index import TopicIndex
from bot.topics.relevance import DEFAULT_LABELS
from bot.topics.scorer_training import LearnedScorer, scorer_folder


@dataclass
class AppContext:
    settings: Settings
    clock: Clock
    services: Services
    intake: Intake  # the one write path for papers (tests store papers through it too)
    _store: Store = field(repr=False)
    _arxiv: ArxivClient = field(repr=False)
    _feeds: FeedReader | None = field(default=None, repr=False)  # None: ARXIV_RSS_URL is off
    _index: TopicIndex | None = field(default=None, repr=False)

    async def match_history(self) -> int:
        """Match the stored history of the topics queued at start (catalog topics new or changed), in chunks:
        the bot runs it in the background once it answers commands. Returns the matches added."""
        return await self._index.catch_up() if self._index is not None else 0

    @property
    def arxiv_requests_sent(self) -> int:
        """Requests sent to arXiv since start (each after the polite interval)."""
        return self._arxiv.http.requests_sent

    def ingestor(self) -> Ingestor:
        """A cycle of the API: the newest papers of the watched categories."""
        source = ArxivApiSource(
            self._arxiv,
            self.settings.arxiv_categories,
            page_size=self.settings.arxiv_page_size,
            overlap=timedelta(hours=self.settings.poll_overlap_hours),
        )
        return Ingestor(self._store, source, self.clock, intake=self.intake)

    def announcements(self) -> AnnouncementCycle | None:
        """A cycle of arXiv's RSS announcement feed, run after each API poll; None when ARXIV_RSS_URL is off."""
        if self._feeds is None:
            return None
        source = ArxivRssSource(self._feeds, self.settings.arxiv_rss_url, self.settings.arxiv_categories)
        ingestor = Ingestor(self._store, source, self.clock, intake=self.intake)
        return AnnouncementCycle(
            self._store, ingestor, self._arxiv, self.intake, self.clock, refusal=feed_refusal(self.settings)
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

    def process_lock(self, name: str) -> ProcessLock:
        """The deployment-wide lock of this name (the poller's: one process polls at a time)."""
        return self._store.process_lock(name)

    def delivery_worker(self, poster: Poster, **options: Any) -> DeliveryWorker:
        """The outbox worker posting through `poster` (options: see DeliveryWorker)."""
        return DeliveryWorker(self._store, poster, self.clock, **options)


def rss_enabled(settings: Settings) -> bool:
    """ARXIV_RSS_URL=off turns the announcement feed off (polling then relies on the API alone)."""
    return settings.arxiv_rss_url.strip().lower() not in ("", "off")


def feed_refusal(settings: Settings) -> str | None:
    """Why the feed may not be read: arXiv's RSS, like its API, asks for a contact in the User-Agent (the poll
    checks it for the API's address; a loopback API beside the real feed needs it checked here)."""
    if is_loopback_url(settings.arxiv_rss_url):
        return None
    problem = contact_problem(settings.arxiv_contact)
    return (
        f"{problem}: set ARXIV_CONTACT to read ARXIV_RSS_URL, or set ARXIV_RSS_URL=off" if problem else None
    )


@asynccontextmanager
async def open_context(
    settings: Settings,
    clock: Clock | None = None,
    *,
    extra_topics: Sequence[CatalogTopic] = (),
    history_in_background: bool = False,
) -> AsyncIterator[AppContext]:
    """Everything the bot and the CLI run on; `extra_topics` join the catalog (the demo's topic). The history
    of catalog topics new or changed is matched before this returns, or, with `history_in_background`, left
    to the caller's `AppContext.match_history` (the bot answers commands meanwhile)."""
    clock = clock or SystemClock()
    store = await open_store(settings.database, clock)
    http = build_http_client(settings.user_agent)
    # Its own client (no arXiv contact sent there), unbounded: ChatModel bounds each answer to 20 s itself.
    llm_http = httpx.AsyncClient(timeout=None) if settings.llm_base_url else None
    polite = PoliteHttp(
        http,
        clock,
        min_interval=settings.arxiv_min_interval_seconds,
        deadline=settings.arxiv_request_deadline_seconds,
    )
    index = TopicIndex(store, clock)
    try:
        catalog = [*load_catalog(), *extra_topics]
        await index.start(catalog, history_later=history_in_background)
        scorer = LearnedScorer(
            store, scorer_folder(settings.database_path), catalog=catalog, labels=DEFAULT_LABELS, clock=clock
        )
        await scorer.start()  # reads the model back; training is the scheduler's (or `scorer train`)
        arxiv = ArxivClient(polite, settings.arxiv_api_url)
        intake = Intake(store, index, clock, scorer)
        services = Services.build(
            store=store,
            index=index,
            arxiv=arxiv,
            intake=intake,
            clock=clock,
            settings=settings,
            scorer=scorer,
            model=chat_model(settings, llm_http),
        )
        feeds = FeedReader(polite) if rss_enabled(settings) else None
        yield AppContext(settings, clock, services, intake, store, arxiv, feeds, index)
    finally:
        await index.stop()  # background history work: its queue stays in the store for the next start
        await http.aclose()
        if llm_http is not None:
            await llm_http.aclose()
        await store.close()


def chat_model(settings: Settings, http: httpx.AsyncClient | None) -> ChatModel | None:
    """The language model /ask and /brief may use: None unless LLM_BASE_URL is set."""
    if http is None or not settings.llm_base_url:
        return None
    return ChatModel(http, settings.llm_base_url, settings.llm_model.strip(), settings.llm_api_key)


__all__ = ["AppContext", "Progress", "open_context"]

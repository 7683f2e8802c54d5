"""A world for the services: a real SQLite file, the loopback arXiv as their source, built as bot/context.py
builds them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from bot.clock import FakeClock
from bot.config import Settings
from bot.intake import Intake
from bot.loopback.arxiv import LoopbackArxiv
from bot.services import Services
from bot.services.topics import TopicLimits
from bot.sources.arxiv_api import ArxivClient
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.store import Store
from bot.topics.index import TopicIndex

WATCHED = ("cs.AI", "cs.CL", "cs.LG")


@dataclass
class World:
    store: Store
    clock: FakeClock
    arxiv: LoopbackArxiv  # what the sources read
    index: TopicIndex
    intake: Intake
    services: Services
    source: ArxivClient

    def rebuilt(self, limits: TopicLimits) -> Services:
        """The same world's services under other limits."""
        return Services.build(
            store=self.store,
            index=self.index,
            arxiv=self.source,
            intake=self.intake,
            clock=self.clock,
            settings=settings_for(self.store),
            limits=limits,
        )


def settings_for(store: Store) -> Settings:
    # The SQLite store's file, when it is one (the services read the categories and the poll interval only).
    database = getattr(getattr(store, "db", None), "path", None)
    extra = {"database_path": database} if database is not None else {}
    return Settings(_env_file=None, arxiv_categories=WATCHED, **extra)


@asynccontextmanager
async def services_world(store: Store, clock: FakeClock) -> AsyncIterator[World]:
    http = build_http_client("paperwatch-tests/0.1", timeout=5.0)
    try:
        async with LoopbackArxiv() as arxiv:
            index = TopicIndex(store, clock)
            await index.start([])
            intake = Intake(store, index, clock)
            source = ArxivClient(PoliteHttp(http, clock, min_interval=0, max_tries=2), arxiv.url)
            services = Services.build(
                store=store,
                index=index,
                arxiv=source,
                intake=intake,
                clock=clock,
                settings=settings_for(store),
            )
            yield World(store, clock, arxiv, index, intake, services, source)
    finally:
        await http.aclose()

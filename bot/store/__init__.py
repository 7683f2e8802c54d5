"""The only code that speaks SQL. `Store` opens the database and groups one repository per table family."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import aiosqlite

from bot.clock import Clock, SystemClock
from bot.store.database import Database
from bot.store.deliveries import DeliveryRepo, PendingDelivery, Wanted
from bot.store.follows import Follow, FollowRepo, Mode
from bot.store.papers import PaperRepo
from bot.store.search import SearchHit, SearchRepo
from bot.store.sources import BackfillRepo, BackfillWindow, SourceRepo, SourceState
from bot.store.topics import TopicRepo, TopicRow

__all__ = [
    "BackfillWindow",
    "Follow",
    "Mode",
    "PendingDelivery",
    "SearchHit",
    "SourceState",
    "Store",
    "TopicRow",
    "Wanted",
]


class Store:
    def __init__(self, path: Path | str, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()
        self.db = Database(Path(path), self.clock)
        self.papers = PaperRepo(self.db)
        self.sources = SourceRepo(self.db)
        self.backfill = BackfillRepo(self.db)
        self.topics = TopicRepo(self.db)
        self.follows = FollowRepo(self.db)
        self.deliveries = DeliveryRepo(self.db)
        self.search = SearchRepo(self.db)

    @classmethod
    async def open(cls, path: Path | str, clock: Clock | None = None) -> Store:
        store = cls(path, clock)
        await store.db.open()
        return store

    async def close(self) -> None:
        await self.db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def transaction(self) -> AbstractAsyncContextManager[aiosqlite.Connection]:
        """One write transaction across repositories (e.g. papers and the deliveries they cause)."""
        return self.db.transaction()

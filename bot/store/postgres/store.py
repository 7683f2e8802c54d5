"""The PostgreSQL store: one database (DATABASE_URL), one repository per table family, behind `bot.store.Store`.
The repositories imported from bot/store/ (not bot/store/postgres/) are written in SQL both engines run."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Self

from bot.clock import Clock, SystemClock
from bot.store.announcements import AnnouncementRepo
from bot.store.follows import FollowRepo
from bot.store.postgres.database import AdvisoryLock, Database
from bot.store.postgres.deliveries import DeliveryRepo
from bot.store.postgres.papers import PaperRepo
from bot.store.postgres.search import SearchRepo
from bot.store.postgres.similar import SimilarRepo
from bot.store.postgres.sources import SourceRepo
from bot.store.postgres.topics import TopicRepo
from bot.store.protocol import ProcessLock
from bot.store.ratings import RatingRepo
from bot.store.saved import SavedRepo
from bot.store.scorer_models import ScorerModelRepo  # written in SQL both engines run
from bot.store.sources import BackfillRepo  # written in SQL both engines run


class PostgresStore:
    def __init__(self, url: str, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()
        self.db = Database(url, self.clock)
        self.papers = PaperRepo(self.db)
        self.sources = SourceRepo(self.db)
        self.backfill = BackfillRepo(self.db)
        self.topics = TopicRepo(self.db)
        self.follows = FollowRepo(self.db)
        self.deliveries = DeliveryRepo(self.db)
        self.search = SearchRepo(self.db)
        self.announcements = AnnouncementRepo(self.db)
        self.ratings = RatingRepo(self.db)
        self.saved = SavedRepo(self.db)
        self.similar = SimilarRepo(self.db)
        self.scorer_models = ScorerModelRepo(self.db)

    @classmethod
    async def open(cls, url: str, clock: Clock | None = None) -> PostgresStore:
        """Connect and migrate; raises Unreachable (one line, no password) when the database cannot be opened."""
        store = cls(url, clock)
        await store.db.open()
        return store

    async def close(self) -> None:
        await self.deliveries.close()  # its workers' liveness sessions end with the store
        await self.db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def process_lock(self, name: str) -> ProcessLock:
        """A session-level advisory lock on a connection of its own: freed when the holder's session ends."""
        return AdvisoryLock(self.db.url, name)

    def transaction(self) -> AbstractAsyncContextManager[object]:
        """One write transaction across repositories (e.g. papers and the deliveries they cause)."""
        return self.db.transaction()

"""The SQLite store: one database file (WAL), one repository per table family, behind `bot.store.Store`."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Self

from bot.clock import Clock, SystemClock
from bot.store.announcements import AnnouncementRepo
from bot.store.database import Database
from bot.store.deliveries import DeliveryRepo
from bot.store.file_lock import FileLock
from bot.store.follows import FollowRepo
from bot.store.papers import PaperRepo
from bot.store.protocol import ProcessLock
from bot.store.ratings import RatingRepo
from bot.store.saved import SavedRepo
from bot.store.scorer_models import ScorerModelRepo
from bot.store.search import SearchRepo
from bot.store.similar import SimilarRepo
from bot.store.sources import BackfillRepo, SourceRepo
from bot.store.topics import TopicRepo


class SqliteStore:
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
        self.announcements = AnnouncementRepo(self.db)
        self.ratings = RatingRepo(self.db)
        self.saved = SavedRepo(self.db)
        self.similar = SimilarRepo(self.db)
        self.scorer_models = ScorerModelRepo(self.db)

    @classmethod
    async def open(cls, path: Path | str, clock: Clock | None = None) -> SqliteStore:
        """Open (creating it, private to its owner) and migrate the database file."""
        store = cls(path, clock)
        await store.db.open()
        return store

    async def close(self) -> None:
        await self.search.close()  # a refresh of the newest papers' index under way
        await self.db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def process_lock(self, name: str) -> ProcessLock:
        """A lock file beside the database: SQLite serves the processes of one machine, as the file does."""
        return FileLock(self.db.path.with_name(f"{self.db.path.name}.{name}.lock"))

    def transaction(self) -> AbstractAsyncContextManager[object]:
        """One write transaction across repositories (e.g. papers and the deliveries they cause)."""
        return self.db.transaction()

"""What /status shows (is polling working, how much is stored, what in a server needs attention), and the
counts the command line prints."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.models import Follow, SkippedSummary, SourceState
from bot.store import Store
from bot.topics.index import CatchUp as CatchUp  # re-exported: what /status shows of it
from bot.topics.index import TopicIndex


@dataclass(frozen=True)
class Status:
    sources: list[SourceState]  # every poll source, with its health and skipped entries
    skipped_elsewhere: list[SkippedSummary]  # skipped entries of other jobs (backfills)
    papers: int  # papers stored
    deliveries: dict[str, int]  # this server's posts by state (pending, sending, sent, failed, summarised)
    broken: list[Follow]  # this server's follows Discord refused
    now: datetime
    poll_interval: timedelta
    history: CatchUp | None = None  # history matching still running in the background (after a start)


class StatusService:
    def __init__(
        self, store: Store, clock: Clock, poll_interval: timedelta, index: TopicIndex | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self.poll_interval = poll_interval
        self.index = index

    async def of_server(self, guild_id: int) -> Status:
        return Status(
            sources=await self.store.sources.all(),
            skipped_elsewhere=await self.store.sources.skipped_elsewhere(),
            papers=await self.store.papers.count(),
            deliveries=await self.store.deliveries.counts(guild_id),
            broken=[f for f in await self.store.follows.for_guild(guild_id) if f.broken],
            now=self.clock.now(),
            poll_interval=self.poll_interval,
            history=self.index.catching_up() if self.index is not None else None,
        )

    async def papers_stored(self) -> int:
        return await self.store.papers.count()

    async def weekly_category_counts(self, weeks: int) -> list[tuple[str, str, int]]:
        """(week start as YYYY-MM-DD, Monday-based, UTC; category; papers) over the last `weeks` weeks."""
        return await self.store.papers.weekly_category_counts(self.clock.now() - timedelta(weeks=weeks))

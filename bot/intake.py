"""The one write path for papers: store them, match them to topics, queue the posts they cause.

Polling (announced papers, except a source's first poll, which is history), backfill (history), /paper's fetch
of a paper not stored yet (looked up by hand: never posted) and the tests all store papers here, so what
happens to a stored paper is read in one place:

    papers -> store (upsert) -> topic index (record matches) -> outbox (one row per following channel)

Everything happens in one transaction, together with the caller's own writes (`also`: a backfill window's
"done" mark, a page's skipped entries), so a crash leaves all of it or none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.clock import Clock
from bot.delivery import enqueue_for_new_papers
from bot.models import Paper, UpsertResult
from bot.store import Store
from bot.topics.index import TopicIndex

ExtraWrites = Callable[[], Awaitable[object]]  # what it returns is ignored


@dataclass(frozen=True, slots=True)
class IntakeReport:
    """What one intake did: the upsert's outcome, the topics each new or updated paper matches (with their
    ancestors: see bot/topics/index.py), and how many posts were queued (0 unless announced)."""

    stored: UpsertResult = field(default_factory=UpsertResult)
    matches: Mapping[str, set[int]] = field(default_factory=dict)
    queued: int = 0

    @property
    def new(self) -> list[str]:
        return self.stored.new

    @property
    def updated(self) -> list[str]:
        return self.stored.updated


class Intake:
    def __init__(self, store: Store, index: TopicIndex, clock: Clock) -> None:
        self.store = store
        self.index = index
        self.clock = clock

    async def store_papers(
        self, papers: Sequence[Paper], *, announce: bool, also: ExtraWrites | None = None
    ) -> IntakeReport:
        """Store `papers` (a new version updates the stored paper), record their topic matches and, when
        `announce`, queue a post per (following channel, paper new to the store); then run `also`. One
        transaction: on any error nothing of it is kept."""
        report = IntakeReport()
        async with self.store.transaction():
            if papers:
                stored = await self.store.papers.upsert(papers, seen_at=self.clock.now())
                matched = await self.index.record_matches(stored, papers)
                queued = (
                    await enqueue_for_new_papers(
                        self.store, self.clock, stored, matched.topics, matched.in_server
                    )
                    if announce
                    else 0
                )
                report = IntakeReport(stored, matched.topics, queued)
            if also is not None:
                await also()
        return report

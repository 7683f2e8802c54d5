"""The one write path for papers: store them, match them to topics, queue the posts they cause.

Polling (announced papers, except a source's first poll, which is history), backfill (history), /paper's fetch
of a paper not stored yet (looked up by hand: never posted) and the tests all store papers here, so what
happens to a stored paper is read in one place:

    papers -> store (upsert) -> topic index (record matches) -> outbox (one row per following channel)

Everything happens in one transaction, together with the caller's own writes (`also`: a backfill window's
"done" mark, a page's skipped entries), so a crash leaves all of it or none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.clock import Clock
from bot.delivery import enqueue_for_new_papers
from bot.models import Paper, UpsertResult
from bot.store import Store
from bot.topics.index import TopicIndex
from bot.topics.scorer_training import LearnedScorer

ExtraWrites = Callable[[], Awaitable[object]]  # what it returns is ignored


@dataclass(frozen=True, slots=True)
class IntakeReport:
    """What one intake did: the upsert's outcome, the topics each new or updated paper matches (with their
    ancestors: see bot/topics/index.py), and how many posts were queued (0 unless announced)."""

    stored: UpsertResult = field(default_factory=UpsertResult)
    matches: Mapping[str, set[int]] = field(default_factory=dict)
    queued: int = 0
    suggested: Mapping[str, set[int]] = field(default_factory=dict)  # the learned scorer's, beside `matches`

    @property
    def new(self) -> list[str]:
        return self.stored.new

    @property
    def updated(self) -> list[str]:
        return self.stored.updated


class Intake:
    def __init__(
        self, store: Store, index: TopicIndex, clock: Clock, scorer: LearnedScorer | None = None
    ) -> None:
        self.store = store
        self.index = index
        self.clock = clock
        self.scorer = scorer  # the learned scorer: suggested matches beside the queries' (None: queries only)

    async def store_papers(
        self, papers: Sequence[Paper], *, announce: bool, also: ExtraWrites | None = None
    ) -> IntakeReport:
        """Store `papers` (a new version updates the stored paper), record their topic matches and, when
        `announce`, queue a post per (following channel, paper new to the store); then run `also`. One
        transaction: on any error nothing of it is kept."""
        report = IntakeReport()
        scored = await self._scored(papers)  # before the transaction: the scorer needs no store
        verdicts = await self._server_verdicts(papers)
        async with self.store.transaction():
            if papers:
                stored = await self.store.papers.upsert(papers, seen_at=self.clock.now())
                matched = await self.index.record_matches(stored, papers)
                changed = set(stored.new) | set(stored.updated)
                suggested = {
                    arxiv_id: extra
                    for arxiv_id, topic_ids in scored.items()
                    if arxiv_id in changed and (extra := topic_ids - matched.topics.get(arxiv_id, set()))
                }
                await self.store.topics.add_suggestions(
                    [(t, arxiv_id) for arxiv_id, ids in suggested.items() for t in sorted(ids)],
                    self.clock.now(),
                )
                queued = (
                    await enqueue_for_new_papers(
                        self.store, self.clock, stored, matched.topics, matched.in_server, suggested, verdicts
                    )
                    if announce
                    else 0
                )
                report = IntakeReport(stored, matched.topics, queued, suggested)
            if also is not None:
                await also()
        return report

    async def _server_verdicts(
        self, papers: Sequence[Paper]
    ) -> dict[tuple[int, int], tuple[set[str], set[str]]]:
        """What each server's ratings withhold or lift, per (topic, server) (bot/topics/scorer_ratings.py)."""
        if self.scorer is None or not self.scorer.views or not papers:
            return {}
        return await asyncio.to_thread(self.scorer.server_verdicts, papers)

    async def _scored(self, papers: Sequence[Paper]) -> dict[str, set[int]]:
        """arxiv id -> topics whose learned scorer suggests the paper (scored in the scorer's own process)."""
        if self.scorer is None or self.scorer.needs_training or not papers:
            return {}
        return await self.scorer.suggest(papers, self.index.queries())

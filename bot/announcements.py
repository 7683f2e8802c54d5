"""The announcement cycle, run after each API poll: read arXiv's RSS announcement feed, then complete the papers
only the feed described.

The feed (bot/sources/rss_source.py) goes through the same Ingestor and intake as the API: each paper's
announcement is recorded per category; a paper announced today that the store lacks is stored, matched and
posted like one the poll found (the outbox posts a paper once per channel, whichever source brought it first);
replacements update papers the store holds and are never posted.

A feed's papers are provisional: dated by their announcement, without affiliations or comments. The second step
asks the API for them by id (a few requests a day, through the same polite client) and stores the full copies
through the intake: the v1 submission time replaces the announcement date, and momentum counts the paper in
the right window. A paper the API cannot complete now is asked for again at the next cycle, for a week.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from bot.clock import Clock
from bot.errors import SourceError
from bot.ingest import CycleReport, Ingestor
from bot.intake import Intake
from bot.sources.base import PaperLookup
from bot.store import Store

log = logging.getLogger(__name__)

COMPLETE_PER_CYCLE = 500  # provisional papers asked of the API per cycle: five requests of 100 ids
COMPLETE_FOR = timedelta(days=7)  # how long a provisional paper is asked for before it is left as it is


@dataclass
class AnnouncementReport:
    cycle: CycleReport
    completed: list[str] = field(default_factory=list)  # provisional papers the API's copy completed
    waiting: int = 0  # provisional papers asked for that the API could not complete yet
    error: str | None = None  # why completing failed this time (the feed's own error is the cycle's)

    @property
    def complete(self) -> bool:
        return self.cycle.complete

    def summary(self) -> str:
        cycle = self.cycle
        if not cycle.complete:
            text = f"{cycle.source}: stopped early: {cycle.error}; the next poll reads it again"
        elif not cycle.pages:
            text = f"{cycle.source}: nothing announced since the last read"
        else:
            text = (
                f"{cycle.source}: {cycle.fetched} papers announced in the watched categories, "
                f"{len(cycle.new)} new to the store, {len(cycle.updated)} new versions"
            )
            if cycle.skipped:
                text += f", {cycle.skipped} items skipped"
        if self.completed:
            text += f"; {len(self.completed)} completed from the API"
        if self.waiting:
            text += f"; {self.waiting} wait for the API"
        if self.error:
            text += f" (completing them failed: {self.error})"
        return text


class AnnouncementCycle:
    def __init__(
        self,
        store: Store,
        ingestor: Ingestor,
        lookup: PaperLookup,
        intake: Intake,
        clock: Clock,
        *,
        refusal: str | None = None,
    ) -> None:
        self.store = store
        self.ingestor = ingestor
        self.lookup = lookup
        self.intake = intake
        self.clock = clock
        self.refusal = refusal  # why the feed may not be read at all (a setting), recorded at every cycle

    @property
    def source(self) -> str:
        return self.ingestor.source

    async def run_once(self) -> AnnouncementReport:
        """Read the feed, then complete provisional papers. Never raises (only cancellation propagates): a
        failure is logged, recorded for /status (the feed's) and retried at the next cycle."""
        if self.refusal is not None:
            await self.ingestor.refuse(self.refusal)
            return AnnouncementReport(CycleReport(self.source, error=self.refusal))
        report = AnnouncementReport(await self.ingestor.poll_once())
        try:
            await self._complete(report)
        except SourceError as exc:
            log.warning("completing papers of %s from the API failed: %s", self.source, exc)
            report.error = str(exc)
        except Exception as exc:
            log.exception("completing papers of %s from the API failed", self.source)
            report.error = f"internal error ({type(exc).__name__}); the log has the details"
        return report

    async def _complete(self, report: AnnouncementReport) -> None:
        since = self.clock.now() - COMPLETE_FOR
        wanted = await self.store.papers.provisional(since=since, limit=COMPLETE_PER_CYCLE)
        if not wanted:
            return
        papers = await self.lookup.fetch_ids(wanted)
        stored = await self.intake.store_papers(
            papers, announce=False
        )  # known papers: never new, never posted
        report.completed = stored.updated
        report.waiting = len(set(wanted) - set(stored.updated))

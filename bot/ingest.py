"""One poll cycle: fetch the newest papers of the watched categories and hand each page to the intake.

Pages are walked newest-first by submission date, from now back to the previous complete cycle's watermark
minus an overlap window (arXiv announces papers hours to days after their submission time, so a late
announcement carries an old date). Each page goes through the intake (bot/intake.py: store, match topics,
queue posts) in its own transaction, with the page's skipped entries. A source's first cycle is history: its
papers are stored and matched, never posted. The watermark advances only when a cycle completes: after an
error or a crash, the next cycle walks the same range again, and the upsert makes the repeat harmless.

Nothing a page holds can stop polling: an entry that is malformed, absurd (a year-9999 date, a 20-digit
version) or outside the window asked for is skipped, recorded once per source and logged once, and the rest of
the page is stored; the watermark never passes the time of the poll. Any failure of a cycle is recorded for
/status and logged, and the next cycle tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.errors import SourceError
from bot.intake import ExtraWrites, Intake, IntakeReport
from bot.models import Paper, SkippedEntry
from bot.sources.arxiv_api import (
    ArxivClient,
    category_query,
    outside_window,
    submitted_bounds,
    submitted_range,
)
from bot.store import Store

log = logging.getLogger(__name__)

MAX_API_RESULTS = 30_000  # arXiv serves at most this many results of one query
LOOKAHEAD = timedelta(days=1)  # the range asked for ends a day after now: clocks and time zones differ


@dataclass
class CycleReport:
    source: str
    pages: int = 0
    fetched: int = 0
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: int = 0
    watermark: datetime | None = None
    complete: bool = False
    error: str | None = None

    def summary(self) -> str:
        state = "complete" if self.complete else f"stopped early: {self.error}"
        mark = self.watermark.strftime("%Y-%m-%d %H:%M UTC") if self.watermark else "none"
        skipped = ""
        if self.skipped:
            skipped = f", {self.skipped} unusable {'entry' if self.skipped == 1 else 'entries'} skipped"
        return (
            f"{self.source}: {self.fetched} papers fetched in {self.pages} pages{skipped}, {len(self.new)} new, "
            f"{len(self.updated)} new versions; newest submission {mark}; cycle {state}"
        )


def source_key(categories: Sequence[str]) -> str:
    return "arxiv-api:" + ",".join(sorted(categories))


async def store_page(
    intake: Intake,
    source: str,
    papers: Sequence[Paper],
    skipped: Sequence[SkippedEntry],
    *,
    announce: bool,
    also: ExtraWrites | None = None,
) -> IntakeReport:
    """One page through the intake, its skipped entries recorded in the same transaction (and `also`, the
    caller's own writes). Each skipped entry is logged the first time this source serves it, so a bad entry
    seen at every poll logs once."""
    store = intake.store
    first_seen: list[SkippedEntry] = []

    async def record_skipped() -> None:
        first_seen.extend(await store.sources.record_skipped(source, skipped, intake.clock.now()))
        if also is not None:
            await also()

    report = await intake.store_papers(papers, announce=announce, also=record_skipped)
    for entry in first_seen:
        log.warning("%s: skipped entry %s: %s", source, entry.entry_id, entry.reason)
    return report


class Ingestor:
    def __init__(
        self,
        store: Store,
        client: ArxivClient,
        clock: Clock,
        *,
        intake: Intake,
        categories: Sequence[str],
        page_size: int = 1000,
        overlap: timedelta = timedelta(hours=120),
    ) -> None:
        self.store = store
        self.client = client
        self.clock = clock
        self.intake = intake
        self.categories = tuple(categories)
        self.page_size = page_size
        self.overlap = overlap
        self.source = source_key(self.categories)

    async def poll_once(self) -> CycleReport:
        """Run one cycle. Failures are recorded (for /status), logged and reported, never raised: the next
        cycle retries. Only cancellation propagates."""
        report = CycleReport(self.source)
        try:
            newest = await self._walk(report, self.clock.now())
        except SourceError as exc:
            log.warning("poll of %s failed after %d pages: %s", self.source, report.pages, exc)
            return await self._failed(report, str(exc))
        except Exception as exc:
            # A fault of this program or of the machine (a full disk): the traceback goes to the log, a line
            # that says where to look goes to /status.
            log.exception("poll of %s failed after %d pages", self.source, report.pages)
            return await self._failed(
                report, f"internal error ({type(exc).__name__}); the log has the details"
            )
        report.complete = True
        report.watermark = newest
        await self.store.sources.record_success(
            self.source, self.clock.now(), watermark=newest, papers=len(report.new)
        )
        return report

    async def refuse(self, error: str) -> None:
        """Record a cycle refused before any request (a setting missing), so /status shows why."""
        await self.store.sources.record_failure(self.source, self.clock.now(), error)

    async def _failed(self, report: CycleReport, error: str) -> CycleReport:
        report.error = error
        await self.store.sources.record_failure(self.source, self.clock.now(), error, papers=len(report.new))
        return report

    async def _walk(self, report: CycleReport, started: datetime) -> datetime:
        """Walk the pages of this cycle's range; return the newest submission time seen (never after now)."""
        state = await self.store.sources.get(self.source)
        # Never later than now: a watermark in the future (stored before it was capped) would make every
        # later range end before it starts.
        mark = min(state.watermark, started) if state.watermark is not None else None
        floor = (mark or started) - self.overlap
        end = started + LOOKAHEAD
        query = f"{category_query(self.categories)} AND {submitted_range(floor, end)}"
        bounds = submitted_bounds(floor, end)
        newest = mark
        # A source's first cycle (no watermark yet) brings days of papers announced before anyone here could
        # follow them: history, stored and matched but never posted.
        announce = state.watermark is not None
        start = 0
        while True:
            page = await self.client.search(query, start=start, max_results=self.page_size)
            if not page.entries:
                break  # the client never returns an empty page while results remain
            outside = outside_window(page.papers, bounds)
            papers = [p for p in page.papers if bounds[0] <= p.published < bounds[1]]
            skipped = [*page.skipped, *outside]
            result = await store_page(self.intake, self.source, papers, skipped, announce=announce)
            report.pages += 1
            report.fetched += len(papers)
            report.skipped += len(skipped)
            report.new += result.new
            report.updated += result.updated
            if papers:
                page_newest = min(max(p.published for p in papers), started)
                newest = page_newest if newest is None else max(newest, page_newest)
            start += page.entries  # skipped entries hold places in arXiv's numbering too
            if start >= min(page.total_results, MAX_API_RESULTS):
                if page.total_results > MAX_API_RESULTS:
                    log.warning(
                        "%s: more than %d results; run `python -m bot backfill`",
                        self.source,
                        MAX_API_RESULTS,
                    )
                break
            all_known = not result.new and not result.updated
            if all_known and any(p.published < floor for p in page.papers):
                break  # a server that ignored the date range: we have walked past the overlap
        # A cycle that saw no paper still moves a first watermark to where it looked from, so the next cycle
        # is a regular one.
        return newest or floor

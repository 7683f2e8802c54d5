"""One poll cycle: fetch the newest papers of the watched categories, store them, hand new ones on.

Pages are walked newest-first by submission date, from now back to the previous complete cycle's watermark
minus an overlap window (arXiv announces papers hours to days after their submission time, so a late
announcement carries an old date). Each page is committed in its own transaction together with whatever the
`on_stored` hook writes (matches, deliveries). The watermark advances only when a cycle completes: after an
error or a crash, the next cycle walks the same range again, and the upsert makes the repeat harmless.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.errors import SourceError
from bot.models import Paper, UpsertResult
from bot.sources.arxiv_api import ArxivClient, category_query, submitted_range
from bot.store import Store

log = logging.getLogger(__name__)

# Called inside the page's transaction with what the upsert did and the page's papers.
StoredHook = Callable[[UpsertResult, Sequence[Paper]], Awaitable[object]]  # what it returns is ignored
MAX_API_RESULTS = 30_000  # arXiv serves at most this many results of one query


@dataclass
class CycleReport:
    source: str
    pages: int = 0
    fetched: int = 0
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    watermark: datetime | None = None
    complete: bool = False
    error: str | None = None

    def summary(self) -> str:
        state = "complete" if self.complete else f"stopped early: {self.error}"
        mark = self.watermark.strftime("%Y-%m-%d %H:%M UTC") if self.watermark else "none"
        return (
            f"{self.source}: {self.fetched} papers fetched in {self.pages} pages, {len(self.new)} new, "
            f"{len(self.updated)} new versions; newest submission {mark}; cycle {state}"
        )


def source_key(categories: Sequence[str]) -> str:
    return "arxiv-api:" + ",".join(sorted(categories))


class Ingestor:
    def __init__(
        self,
        store: Store,
        client: ArxivClient,
        clock: Clock,
        *,
        categories: Sequence[str],
        page_size: int = 1000,
        overlap: timedelta = timedelta(hours=120),
        on_stored: StoredHook | None = None,
        on_history: StoredHook | None = None,
    ) -> None:
        self.store = store
        self.client = client
        self.clock = clock
        self.categories = tuple(categories)
        self.page_size = page_size
        self.overlap = overlap
        self.on_stored = on_stored
        # A source's first cycle (no watermark yet) brings days of papers announced before anyone here could
        # follow them: history, handed to `on_history` (match, don't post) when one is given.
        self.on_history = on_history
        self.source = source_key(self.categories)

    async def poll_once(self) -> CycleReport:
        """Run one cycle. Source errors are recorded and reported, not raised: the next cycle retries."""
        report = CycleReport(self.source)
        started = self.clock.now()
        state = await self.store.sources.get(self.source)
        floor = (state.watermark or started) - self.overlap
        query = f"{category_query(self.categories)} AND {submitted_range(floor, started + timedelta(days=1))}"
        newest = state.watermark
        hook = self.on_history if state.watermark is None and self.on_history is not None else self.on_stored
        try:
            start = 0
            while True:
                page = await self.client.search(query, start=start, max_results=self.page_size)
                if not page.papers:
                    break  # the client never returns an empty page while results remain
                result = await self._commit(page.papers, hook)
                report.pages += 1
                report.fetched += len(page.papers)
                report.new += result.new
                report.updated += result.updated
                page_newest = max(p.published for p in page.papers)
                newest = page_newest if newest is None else max(newest, page_newest)
                start += len(page.papers)
                if start >= min(page.total_results, MAX_API_RESULTS):
                    if page.total_results > MAX_API_RESULTS:
                        log.warning(
                            "%s: more than %d results; run `python -m bot backfill`",
                            self.source,
                            MAX_API_RESULTS,
                        )
                    break
                all_known = not result.new and not result.updated
                if all_known and min(p.published for p in page.papers) < floor:
                    break  # a server that ignored the date range: we have walked past the overlap
        except SourceError as exc:
            report.error = str(exc)
            await self.store.sources.record_failure(
                self.source, self.clock.now(), str(exc), papers=len(report.new)
            )
            log.warning("poll of %s failed after %d pages: %s", self.source, report.pages, exc)
            return report
        report.complete = True
        # A cycle that saw no paper still moves a first watermark to where it looked from, so the next cycle
        # is a regular one.
        newest = newest or floor
        report.watermark = newest
        await self.store.sources.record_success(
            self.source, self.clock.now(), watermark=newest, papers=len(report.new)
        )
        return report

    async def _commit(self, papers: Sequence[Paper], hook: StoredHook | None) -> UpsertResult:
        async with self.store.transaction():
            result = await self.store.papers.upsert(papers, seen_at=self.clock.now())
            if hook is not None:
                await hook(result, papers)
        return result

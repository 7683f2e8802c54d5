"""History backfill: walk submission-date windows small enough for one API page each, resumably.

Windows start a day wide; a window whose totalResults exceeds one page is split in halves (down to a minute,
then paged). Each window's papers go through the intake as history (stored and matched, never posted), and
its "done" mark is committed in the same transaction, so an interrupted backfill resumes at the first window
not done and never stores half a window twice. An entry that holds no usable paper or lies outside its window
is skipped, recorded under the job's key (shown by /status) and logged once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.ingest import store_page
from bot.intake import Intake
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
MINUTE = timedelta(minutes=1)
Window = tuple[datetime, datetime]  # inclusive bounds, minute precision


@dataclass(frozen=True, slots=True)
class Progress:
    papers_stored: int
    windows_done: int
    windows_left: int
    seconds_left: float | None  # estimate from the pace so far; None before the first window

    def line(self) -> str:
        eta = "estimating" if self.seconds_left is None else _duration(self.seconds_left)
        done = "1 window" if self.windows_done == 1 else f"{self.windows_done} windows"
        if self.windows_left == 0:
            return f"{self.papers_stored} papers stored · all {done} done"
        return (
            f"{self.papers_stored} papers stored · {done} done, {self.windows_left} left · about {eta} left"
        )


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def job_key(categories: Sequence[str]) -> str:
    return "backfill:" + ",".join(sorted(categories))


def day_windows(now: datetime, days: int) -> list[Window]:
    """Whole UTC days from `days` ago through today, newest first."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return [
        (today - timedelta(days=i), today - timedelta(days=i) + timedelta(days=1) - MINUTE)
        for i in range(days + 1)
    ]


def split_window(window: Window) -> list[Window]:
    start, end = window
    minutes = int((end - start) / MINUTE)
    middle = start + MINUTE * (minutes // 2)
    return [(middle + MINUTE, end), (start, middle)]


class Backfill:
    def __init__(
        self,
        store: Store,
        client: ArxivClient,
        clock: Clock,
        *,
        intake: Intake,
        categories: Sequence[str],
        page_size: int = 2000,
        progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.store = store
        self.client = client
        self.clock = clock
        self.intake = intake
        self.categories = tuple(categories)
        self.page_size = page_size
        self.progress = progress or (lambda _p: None)
        self.job = job_key(self.categories)

    async def plan(self, days: int) -> None:
        """Add the day windows not covered yet; windows already planned (or split) keep their state."""
        existing = await self.store.backfill.windows(self.job)
        wanted = [
            w
            for w in day_windows(self.clock.now(), days)
            if not any(e.start >= w[0] and e.end <= w[1] for e in existing)
        ]
        await self.store.backfill.plan(self.job, wanted)

    async def run(self, days: int) -> int:
        """Backfill the last `days` days; returns the number of papers stored new. Source errors propagate
        (after the client's retries) with every finished window kept."""
        await self.plan(days)
        stored = 0
        done_now = 0
        began = self.clock.monotonic()
        while True:
            windows = await self.store.backfill.windows(self.job)
            pending = [(w.start, w.end) for w in windows if not w.done]
            done = len(windows) - len(pending)
            if not pending:
                if not done_now:  # nothing was left to do: still say where the job stands
                    self.progress(Progress(stored, done, 0, 0.0))
                return stored
            window = pending[0]
            stored += await self._fill(window)
            done_now += 1
            # Each window costs at least one request, and requests are spaced by arXiv's interval.
            pace = max((self.clock.monotonic() - began) / done_now, self.client.http.min_interval)
            self.progress(Progress(stored, done + 1, len(pending) - 1, pace * (len(pending) - 1)))

    async def _fill(self, window: Window) -> int:
        query = f"{category_query(self.categories)} AND {submitted_range(*window)}"
        first = await self.client.search(query, start=0, max_results=self.page_size, sort_order="ascending")
        if first.total_results > self.page_size and window[1] - window[0] >= MINUTE:
            log.info("window %s..%s holds %d papers: splitting", window[0], window[1], first.total_results)
            await self.store.backfill.split(self.job, window, split_window(window))
            return 0
        papers: list[Paper] = list(first.papers)
        skipped: list[SkippedEntry] = list(first.skipped)
        served = first.entries
        while served < first.total_results:  # only for a one-minute window still over a page
            page = await self.client.search(
                query, start=served, max_results=self.page_size, sort_order="ascending"
            )
            if not page.entries:
                break
            papers += page.papers
            skipped += page.skipped
            served += page.entries  # skipped entries hold places in arXiv's numbering too
        bounds = submitted_bounds(*window)
        skipped += outside_window(papers, bounds)
        papers = [p for p in papers if bounds[0] <= p.published < bounds[1]]

        async def mark_done() -> None:
            await self.store.backfill.mark_done(self.job, window, len(papers))

        # History: stored and matched, never posted; the window is done in the same transaction.
        result = await store_page(self.intake, self.job, papers, skipped, announce=False, also=mark_done)
        return len(result.new)

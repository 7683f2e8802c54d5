"""The arXiv API as a live source: the newest papers of the watched categories, by submission date.

A cycle walks pages newest-first from now back to the last complete cycle's watermark minus an overlap window:
arXiv announces papers hours to days after their submission time, so a late announcement carries an old date.
Entries that hold no usable paper, or lie outside the range asked for (a year-9999 date), are skipped. A
source's first cycle (no watermark yet) brings days of papers announced before anyone here could follow them:
history, never posted.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta

from bot.models import SourceState
from bot.sources.arxiv_api import (
    ArxivClient,
    category_query,
    outside_window,
    submitted_bounds,
    submitted_range,
)
from bot.sources.base import Batch

log = logging.getLogger(__name__)

MAX_API_RESULTS = 30_000  # arXiv serves at most this many results of one query
LOOKAHEAD = timedelta(days=1)  # the range asked for ends a day after now: clocks and time zones differ


def source_key(categories: Sequence[str]) -> str:
    return "arxiv-api:" + ",".join(sorted(categories))


class ArxivApiSource:
    def __init__(
        self,
        client: ArxivClient,
        categories: Sequence[str],
        *,
        page_size: int = 1000,
        overlap: timedelta = timedelta(hours=120),
    ) -> None:
        self.client = client
        self.categories = tuple(categories)
        self.page_size = page_size
        self.overlap = overlap
        self.key = source_key(self.categories)

    async def read(self, state: SourceState, now: datetime) -> AsyncIterator[Batch]:
        """A batch per page. Each carries the watermark so far: the newest submission time seen, never after
        `now` (a watermark in the future, stored before it was capped, would make every later range end before
        it starts); a cycle that sees no paper still moves a first watermark to where it looked from."""
        mark = min(state.watermark, now) if state.watermark is not None else None
        floor = (mark or now) - self.overlap
        end = now + LOOKAHEAD
        query = f"{category_query(self.categories)} AND {submitted_range(floor, end)}"
        bounds = submitted_bounds(floor, end)
        newest = mark
        announce = state.watermark is not None
        start = 0
        served = False
        while True:
            page = await self.client.search(query, start=start, max_results=self.page_size)
            if not page.entries:
                break  # the client never returns an empty page while results remain
            papers = [p for p in page.papers if bounds[0] <= p.published < bounds[1]]
            if papers:
                page_newest = min(max(p.published for p in papers), now)
                newest = page_newest if newest is None else max(newest, page_newest)
            served = True
            yield Batch(
                papers=papers,
                skipped=[*page.skipped, *outside_window(page.papers, bounds)],
                announce=announce,
                watermark=newest or floor,
                past_range=any(p.published < floor for p in page.papers),
            )
            start += page.entries  # skipped entries hold places in arXiv's numbering too
            if start >= min(page.total_results, MAX_API_RESULTS):
                if page.total_results > MAX_API_RESULTS:
                    log.warning(
                        "%s: more than %d results; run `python -m bot backfill`", self.key, MAX_API_RESULTS
                    )
                break
        if not served:
            yield Batch(announce=announce, watermark=newest or floor)

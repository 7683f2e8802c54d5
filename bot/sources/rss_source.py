"""arXiv's RSS announcement feed as a live source: what arXiv announced today in the watched categories.

One request per cycle for every category (`.../rss/cs.AI+cs.LG`), conditional on the validators of the last
complete cycle, through the polite client the API uses, so arXiv's interval holds across both. What it brings
that the API does not: how each paper was announced in each category (new, cross-list, replacement), and every
paper announced today even when the API's answer misses one. Its papers are provisional (dated by their
announcement); the API's copy completes them (bot/announcements.py).

New and cross-listed items are papers announced for the first time; replacements are new versions, stored
only over papers the store already holds, and never posted. A feed that serves an old batch again (one of
arXiv's known faults) brings nothing new: the upsert and the announcements keep the first sighting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import datetime

from bot.models import AnnounceKind, Announcement, Paper, SkippedEntry, SourceState
from bot.sources.base import Batch, Validators
from bot.sources.feeds import FeedItem, FeedReader, rss_url

# The kind an item's type gives its paper's primary category, and the kind it gives every other category.
_KINDS: dict[str, tuple[AnnounceKind, AnnounceKind]] = {
    "new": ("new", "cross"),
    "cross": ("cross", "cross"),
    "replace": ("replace", "replace-cross"),
    "replace-cross": ("replace-cross", "replace-cross"),
}


def rss_key(categories: Sequence[str]) -> str:
    return "arxiv-rss:" + ",".join(sorted(categories))


def watched(category: str, categories: Sequence[str]) -> bool:
    """Whether a paper's category is one of the watched ones (a watched archive, e.g. `math`, holds its own)."""
    return any(category == name or category.startswith(name + ".") for name in categories)


def announcements_of(item: FeedItem, categories: Sequence[str]) -> list[Announcement]:
    """How the item was announced in each watched category it lists: in a combined feed one item stands for
    every category, `new` for the primary and `cross` for the others (`replace` and `replace-cross` likewise)."""
    paper = item.paper
    kinds = _KINDS.get(item.announce_type)
    if kinds is None:
        return []
    day = paper.published.date()
    return [
        Announcement(paper.arxiv_id, paper.version, c, kinds[c != paper.primary_category], day)
        for c in paper.categories
        if watched(c, categories)
    ]


class ArxivRssSource:
    def __init__(self, reader: FeedReader, base_url: str, categories: Sequence[str]) -> None:
        self.reader = reader
        self.categories = tuple(categories)
        self.url = rss_url(base_url, self.categories)
        self.key = rss_key(self.categories)

    async def read(self, state: SourceState, now: datetime) -> AsyncIterator[Batch]:
        """One batch: the feed's papers and their announcements, or nothing when the feed is unchanged since
        the validators of the last complete cycle (a 304)."""
        result = await self.reader.fetch_arxiv(self.url, etag=state.etag, last_modified=state.last_modified)
        validators = Validators(result.etag, result.last_modified)
        papers: list[Paper] = []
        updates: list[Paper] = []
        announcements: list[Announcement] = []
        skipped = list(result.skipped)
        for item in result.items:
            found = announcements_of(item, self.categories)
            if not found:
                why = f"announce type {item.announce_type!r}" if item.announce_type not in _KINDS else None
                reason = why or f"in none of the watched categories ({' '.join(item.paper.categories)})"
                skipped.append(SkippedEntry(item.paper.versioned_id, reason))
                continue
            # A provisional date never lies ahead of the clock (a feed dated by another zone's midnight).
            paper = (
                item.paper if item.paper.published <= now else replace(item.paper, published=now, updated=now)
            )
            (papers if item.is_new_paper else updates).append(paper)
            announcements += found
        yield Batch(
            papers=papers,
            updates=updates,
            announcements=announcements,
            skipped=skipped,
            announce=True,  # today's announcements: a paper the store lacks is news, on any cycle
            validators=validators,
        )

"""The topic index: every topic's query, kept in step with the store, and what it matches.

It syncs the catalog into the store at start, matches new papers as they are stored (the intake calls it inside
the papers' transaction), and matches a topic's whole history when it is created or its query changes. Reading
the history for a query is one loop, `confirmed`: the full-text prefilter's candidates, a batch at a time,
confirmed by the exact evaluator in a worker thread, so a long scan never holds the event loop. History matching,
/search and the CLI's `match` all read through it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from datetime import datetime
from typing import TypeVar

from bot.clock import Clock
from bot.models import Paper, UpsertResult
from bot.store import Store
from bot.topics.catalog import CatalogTopic
from bot.topics.matcher import Matcher
from bot.topics.query import PaperText, TopicQuery, parse_query

log = logging.getLogger(__name__)
HISTORY_BATCH = 1000  # papers evaluated per trip to the worker thread
T = TypeVar("T")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Evaluating thousands of papers allocates millions of short-lived objects and no cycles: the cyclic
    collector would rescan the whole heap again and again (a third of the time, measured) for nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def matching(query: TopicQuery, papers: Sequence[Paper]) -> list[bool]:
    """The exact evaluator over a batch: CPU-bound, run in a worker thread."""
    with gc_paused():
        return [query.matches(PaperText(p)) for p in papers]


async def confirmed(
    query: TopicQuery, batches: AsyncIterable[Sequence[T]], paper: Callable[[T], Paper]
) -> AsyncGenerator[tuple[int, list[T]], None]:
    """For each batch of prefilter candidates (papers, or hits holding one), how many it held and those the
    exact evaluator confirms, in their order. The prefilter may return more than the query matches (an ANDNOT
    part, an id or a category prefix are left to the evaluator), never fewer."""
    async for batch in batches:
        verdicts = await asyncio.to_thread(matching, query, [paper(item) for item in batch])
        yield len(batch), [item for item, ok in zip(batch, verdicts, strict=True) if ok]


def categories_in(query: TopicQuery, stored: Sequence[str]) -> list[str] | None:
    """Of the `stored` category names, those the query binds its matches to ([] when it binds none; None when
    it needs categories none of them is). Queries are case-insensitive; stored names are not."""
    wanted = query.categories()
    if not wanted:
        return []
    return [name for name in stored if name.casefold() in wanted] or None


def _itself(paper: Paper) -> Paper:
    return paper


class TopicIndex:
    """Topic id -> query for every stored topic, with the matcher that fans new papers out to them."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.matcher = Matcher()
        self._queries: dict[int, TopicQuery] = {}

    async def start(self, catalog: Sequence[CatalogTopic]) -> None:
        """Store the catalog (matching the history of topics that are new or changed) and load every topic."""
        for row, slug in await self.store.topics.rekey_legacy():
            log.info(
                "topic %d (%s) of server %d: slug %r is now %r",
                row.id,
                row.name,
                row.guild_id,
                row.slug,
                slug,
            )
        for topic in catalog:
            await self._save_catalog(topic)
        for row in await self.store.topics.all():
            if row.id not in self._queries:
                self.register(row.id, parse_query(row.query))

    async def _save_catalog(self, topic: CatalogTopic) -> None:
        row, changed = await self.store.topics.save(
            guild_id=0,
            slug=topic.slug,
            name=topic.name,
            description=topic.description,
            query=topic.query.text,
            at=self.clock.now(),
        )
        self.register(row.id, topic.query)
        if changed:
            await self.match_history(row.id, topic.query)

    def register(self, topic_id: int, query: TopicQuery) -> None:
        """A topic created or given a new query: new papers are matched against it from now on."""
        self._queries[topic_id] = query
        self.matcher.add(topic_id, query)

    def forget(self, topic_id: int) -> None:
        self._queries.pop(topic_id, None)
        self.matcher.remove(topic_id)

    def query(self, topic_id: int) -> TopicQuery | None:
        """The query of a topic, or None for a topic deleted meanwhile."""
        return self._queries.get(topic_id)

    # ---- new papers ----------------------------------------------------------------------------------------

    async def record_matches(self, result: UpsertResult, papers: Sequence[Paper]) -> dict[str, set[int]]:
        """Inside the papers' transaction: match those that are new or have a new version, record the matches,
        and return them (arxiv_id -> topic ids). Returned, not kept here: a /paper lookup may store a paper
        while a poll is between its two steps."""
        changed = set(result.new) | set(result.updated)
        matches = self.matcher.match_many(p for p in papers if p.arxiv_id in changed)
        pairs = [(topic_id, arxiv_id) for arxiv_id, ids in matches.items() for topic_id in sorted(ids)]
        await self.store.topics.add_matches(pairs, self.clock.now())
        return matches

    def topics_matching(self, paper: Paper) -> set[int]:
        """Ids of the topics whose query matches the paper now."""
        return self.matcher.match(paper)

    # ---- the history ---------------------------------------------------------------------------------------

    async def stored_categories(self, query: TopicQuery) -> list[str] | None:
        """The stored spelling of the categories the query binds its matches to ([] when it binds none; None
        when it needs categories no stored paper has)."""
        if not query.categories():
            return []
        return categories_in(query, await self.store.papers.category_names())

    async def history(
        self, query: TopicQuery, *, since: datetime | None = None, batch: int = HISTORY_BATCH
    ) -> AsyncGenerator[list[Paper], None]:
        """Every stored paper the query matches (submitted since `since`), a confirmed batch at a time, in the
        store's order."""
        categories = await self.stored_categories(query)
        if categories is None:
            return  # it needs a category no stored paper has
        candidates = self.store.topics.candidates(
            query.to_fts5(), categories=categories, since=since, batch=batch
        )
        async with aclosing(confirmed(query, candidates, _itself)) as confirming:
            async for _checked, papers in confirming:
                yield papers

    async def match_history(self, topic_id: int, query: TopicQuery, since: datetime | None = None) -> int:
        """Record every stored paper the query matches, each batch's matches in a short transaction; returns the
        matches added. Stops early when the topic gets another query or is deleted meanwhile: that change
        matches the history itself."""
        registered = topic_id in self._queries
        added = 0
        async with aclosing(self.history(query, since=since)) as confirming:
            async for papers in confirming:
                current = self._queries.get(topic_id)
                if current != query and (current is not None or registered):
                    log.debug("topic %d changed during its history match: stopped", topic_id)
                    break
                added += await self.store.topics.add_matches(
                    [(topic_id, p.arxiv_id) for p in papers], self.clock.now()
                )
        log.debug("topic %d: %d papers of the history match", topic_id, added)
        return added

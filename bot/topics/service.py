"""Topics at work: the catalog synced into the store, new papers matched as they are stored, and a topic's
whole history matched when it is created or its query changes."""

from __future__ import annotations

import gc
import logging
import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

from bot.clock import Clock
from bot.errors import PaperwatchError
from bot.models import Paper, UpsertResult
from bot.store import Store, TopicRow
from bot.topics.catalog import CatalogTopic
from bot.topics.matcher import Matcher
from bot.topics.query import PaperText, TopicQuery, parse_query

log = logging.getLogger(__name__)
MAX_NAME_LENGTH = 80
MAX_DESCRIPTION_LENGTH = 1000


class TopicError(PaperwatchError):
    """A topic cannot be created or found as asked."""


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


def slugify(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-") or "topic"


class TopicService:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.matcher = Matcher()
        self.queries: dict[int, TopicQuery] = {}

    async def start(self, catalog: Sequence[CatalogTopic]) -> None:
        """Store the catalog (matching the history of topics that are new or changed) and load every topic."""
        for topic in catalog:
            await self._save(0, topic.slug, topic.name, topic.description, topic.query)
        for row in await self.store.topics.all():
            if row.id not in self.queries:
                self._register(row.id, parse_query(row.query))

    def _register(self, topic_id: int, query: TopicQuery) -> None:
        self.queries[topic_id] = query
        self.matcher.add(topic_id, query)

    async def _save(
        self, guild_id: int, slug: str, name: str, description: str, query: TopicQuery
    ) -> tuple[TopicRow, int]:
        row, changed = await self.store.topics.save(
            guild_id=guild_id,
            slug=slug,
            name=name,
            description=description,
            query=query.text,
            at=self.clock.now(),
        )
        self._register(row.id, query)
        matched = await self.match_history(row.id, query) if changed else 0
        return row, matched

    async def save_custom(
        self, guild_id: int, name: str, query_text: str, description: str = ""
    ) -> tuple[TopicRow, int]:
        """Create or change a server's own topic; returns it and how many stored papers it matches now.
        Raises QuerySyntaxError (with a position) for a bad query, TopicError for a bad name."""
        name = " ".join(name.split())
        if not name or len(name) > MAX_NAME_LENGTH:
            raise TopicError(f"A topic name needs 1 to {MAX_NAME_LENGTH} characters.")
        if len(description) > MAX_DESCRIPTION_LENGTH:
            raise TopicError(f"A description is at most {MAX_DESCRIPTION_LENGTH} characters.")
        query = parse_query(query_text)
        catalog_twin = await self.store.topics.find(0, name)
        if catalog_twin is not None:
            raise TopicError(
                f"“{catalog_twin.name}” is a catalog topic: follow it by name, or pick another name."
            )
        return await self._save(guild_id, slugify(name), name, description, query)

    async def match_history(self, topic_id: int, query: TopicQuery, since: datetime | None = None) -> int:
        """Match every stored paper (FTS5 prefilter, then the exact evaluator); returns the matches added."""
        categories = await self.stored_categories(query)
        if categories is None:
            return 0  # it needs a category no stored paper has
        added = 0
        async for batch in self.store.topics.candidates(query.to_fts5(), categories=categories, since=since):
            with gc_paused():
                hits = [(topic_id, p.arxiv_id) for p in batch if query.matches(PaperText(p))]
            added += await self.store.topics.add_matches(hits, self.clock.now())
        log.debug("topic %d: %d papers of the history match", topic_id, added)
        return added

    async def stored_categories(self, query: TopicQuery) -> list[str] | None:
        """The stored spelling of the categories the query binds its matches to ([] when it binds none; None
        when it needs categories no stored paper has). Queries are case-insensitive; stored names are not."""
        wanted = query.categories()
        if not wanted:
            return []
        found = [name for name in await self.store.papers.category_names() if name.casefold() in wanted]
        return found or None

    async def on_stored(self, result: UpsertResult, papers: Sequence[Paper]) -> dict[str, set[int]]:
        """Ingest hook, inside the page's transaction: match papers that are new or have a new version, record
        the matches, and return them (arxiv_id -> topic ids) for the outbox. Returned, not kept on the service:
        a /paper lookup may store a paper while a poll is between its two steps."""
        changed = set(result.new) | set(result.updated)
        matches = self.matcher.match_many(p for p in papers if p.arxiv_id in changed)
        pairs = [(topic_id, arxiv_id) for arxiv_id, ids in matches.items() for topic_id in sorted(ids)]
        await self.store.topics.add_matches(pairs, self.clock.now())
        return matches

    def query(self, topic_id: int) -> TopicQuery:
        return self.queries[topic_id]

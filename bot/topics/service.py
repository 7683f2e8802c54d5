"""Topics at work: the catalog synced into the store, servers' own topics created and changed within limits,
new papers matched as they are stored, a topic's whole history matched when it is created or its query
changes, and searches of the history.

Every history scan is bounded before it starts: a server's topic must have a word the full-text index can use,
and may not need more than a bounded share of the stored papers checked. The exact evaluation of candidates
runs in a worker thread, a batch at a time, so a long scan never holds the event loop.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.errors import PaperwatchError
from bot.models import Paper, UpsertResult
from bot.store import SearchHit, Store, TopicRow
from bot.store.topics import TopicNameTaken, find_named, fold_name, topic_key
from bot.topics.catalog import CatalogTopic
from bot.topics.matcher import Matcher
from bot.topics.query import PaperText, TopicQuery, parse_query

log = logging.getLogger(__name__)
MAX_NAME_LENGTH = 80
MAX_DESCRIPTION_LENGTH = 1000
MAX_LATEST = 50  # papers one /latest lists
HISTORY_BATCH = 1000  # papers evaluated per trip to the worker thread
CHANGE_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class TopicLimits:
    """What one server may ask of the bot. Each history scan costs CPU in proportion to its candidates."""

    custom_topics: int = 50  # a server's own topics
    changes_per_hour: int = 10  # topics created or given a new query, per server
    broad_share: float = 0.25  # a topic may need at most this share of the stored papers checked...
    broad_floor: int = 1_000  # ...but any topic may need this many (a small history is cheap to scan)...
    history_candidates: int = 50_000  # ...and none more than this
    search_candidates: int = 10_000  # papers one /search checks before it answers with what it found

    def broad_limit(self, stored: int) -> int:
        """The most candidates a topic's history scan may have, with `stored` papers in the store."""
        return min(self.history_candidates, max(self.broad_floor, int(stored * self.broad_share)))


class TopicError(PaperwatchError):
    """A topic cannot be created, changed or found as asked."""


class TopicLimitReached(TopicError):
    """The server reached one of its limits (topics, changes per hour)."""


class QueryTooBroad(TopicError):
    """The query would have the bot check too much of the stored history."""


@dataclass(frozen=True)
class TopicPlan:
    """A checked request to create or change a server's own topic; `TopicService.save` carries it out."""

    guild_id: int
    name: str
    description: str
    query: TopicQuery
    current: TopicRow | None  # the server's topic of that very name: this changes it

    @property
    def changes_query(self) -> bool:
        return self.current is None or self.current.query != self.query.text


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]  # confirmed matches, best first
    checked: int  # candidates the exact evaluator looked at
    complete: bool  # every candidate was checked: no other stored paper matches


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


def check_latest_count(count: int) -> None:
    if not 1 <= count <= MAX_LATEST:
        raise TopicError(f"count is how many papers to list: a whole number from 1 to {MAX_LATEST}.")


def slugify(name: str) -> str:
    """A server topic's slug: its name's key (letters and digits of any script, hyphens between)."""
    return topic_key(name)


def has_index_term(query: TopicQuery) -> bool:
    """Whether the history of this query can be narrowed before evaluating papers: by a full-text term or by
    the categories every match must have. Without either (`a*`, `au:k`, `cat:cs.*`, `id:2401*`), every stored
    paper would be evaluated."""
    return query.to_fts5() is not None or bool(query.categories())


def shown_query(query: TopicQuery) -> str:
    text = " ".join(query.text.split())
    return (text[:97] + "…" if len(text) > 100 else text).replace("`", "ˋ")


NARROWING = (
    "Narrow it with AND: a distinctive word in ti:, abs: or all:, a prefix of at least 4 letters "
    "(`diffus*`, not `di*`), an author's surname (`au:hinton`) or a category (`cat:cs.LG`); "
    "e.g. `cat:cs.RO AND abs:grasping`."
)


class TopicService:
    def __init__(self, store: Store, clock: Clock, limits: TopicLimits | None = None) -> None:
        self.store = store
        self.clock = clock
        self.limits = limits or TopicLimits()
        self.matcher = Matcher()
        self.queries: dict[int, TopicQuery] = {}
        self._changes: dict[int, deque[datetime]] = {}  # guild -> times of its recent query changes

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
            if row.id not in self.queries:
                self._register(row.id, parse_query(row.query))

    def _register(self, topic_id: int, query: TopicQuery) -> None:
        self.queries[topic_id] = query
        self.matcher.add(topic_id, query)

    def _forget(self, topic_id: int) -> None:
        self.queries.pop(topic_id, None)
        self.matcher.remove(topic_id)

    async def _save_catalog(self, topic: CatalogTopic) -> None:
        row, changed = await self.store.topics.save(
            guild_id=0,
            slug=topic.slug,
            name=topic.name,
            description=topic.description,
            query=topic.query.text,
            at=self.clock.now(),
        )
        self._register(row.id, topic.query)
        if changed:
            await self.match_history(row.id, topic.query)

    # ---- finding -------------------------------------------------------------------------------------------

    async def find(self, guild_id: int, name: str) -> TopicRow | None:
        """The topic a server means by `name`: its own first, then the catalog's (see TopicRepo.find)."""
        return await self.store.topics.find(guild_id, name)

    async def visible_to(self, guild_id: int) -> list[TopicRow]:
        return await self.store.topics.visible_to(guild_id)

    # ---- a server's own topics ---------------------------------------------------------------------------

    async def plan_custom(
        self, guild_id: int, name: str, query_text: str, description: str = ""
    ) -> TopicPlan:
        """Check a request to create or change a server's own topic, without changing anything. Raises
        QuerySyntaxError (with a position) for a bad query and a TopicError saying what to do otherwise."""
        name = " ".join(name.split())
        if not name or len(name) > MAX_NAME_LENGTH:
            raise TopicError(f"A topic name needs 1 to {MAX_NAME_LENGTH} characters.")
        if len(description) > MAX_DESCRIPTION_LENGTH:
            raise TopicError(f"A description is at most {MAX_DESCRIPTION_LENGTH} characters.")
        query = parse_query(query_text)
        own = await self.store.topics.own(guild_id)
        current = next((t for t in own if fold_name(t.name) == fold_name(name)), None)
        if current is None:
            self._check_new_name(name, own, await self.store.topics.own(0))
            if len(own) >= self.limits.custom_topics:
                raise TopicLimitReached(self._too_many_text(own))
        plan = TopicPlan(guild_id, name if current is None else current.name, description, query, current)
        if plan.changes_query:
            self._check_rate(guild_id)
            await self.check_scope(query)
        return plan

    def _check_new_name(self, name: str, own: Sequence[TopicRow], catalog: Sequence[TopicRow]) -> None:
        key = topic_key(name)
        twin = next((t for t in own if key in (topic_key(t.name), t.slug)), None)
        if twin is not None:
            raise TopicError(
                f"This server already has the topic “{twin.name}”, and “{name}” differs from it only in case, "
                f"spacing or punctuation. To change that topic, use its name exactly (/follow topic:{twin.name} "
                "query:…); for a new topic, pick a name that differs in its letters or digits."
            )
        catalog_twin = find_named(catalog, name)
        if catalog_twin is not None:
            raise TopicError(
                f"“{catalog_twin.name}” is a catalog topic: follow it by name, or pick another name."
            )

    def _too_many_text(self, own: Sequence[TopicRow]) -> str:
        return (
            f"This server has {len(own)} topics of its own, the most it may have "
            f"({self.limits.custom_topics}). Delete one that no channel follows any more "
            "(/unfollow topic:<name> deletes a server topic once nothing follows it), or give one of them a new "
            "query with /follow topic:<its name> query:<new query>."
        )

    def _recent_changes(self, guild_id: int) -> deque[datetime]:
        times = self._changes.setdefault(guild_id, deque())
        since = self.clock.now() - CHANGE_WINDOW
        while times and times[0] <= since:
            times.popleft()
        return times

    def _check_rate(self, guild_id: int) -> None:
        times = self._recent_changes(guild_id)
        if len(times) >= self.limits.changes_per_hour:
            free_at = times[0] + CHANGE_WINDOW
            minutes = max(1, -(-int((free_at - self.clock.now()).total_seconds()) // 60))
            raise TopicLimitReached(
                f"This server has created or changed {len(times)} topic queries in the last hour, the most it may "
                f"(each one re-reads the stored history). Try again in {minutes} minute"
                f"{'' if minutes == 1 else 's'}, at {free_at:%H:%M} UTC."
            )

    async def check_scope(self, query: TopicQuery) -> None:
        """Refuse a query whose history scan would be unbounded or cover a large share of the stored papers;
        the message says how to narrow it."""
        categories = await self.stored_categories(query)
        if categories is None:
            return  # it needs a category no stored paper has: nothing to scan
        if not has_index_term(query):
            raise QueryTooBroad(
                f"`{shown_query(query)}` has no word the search index can use (a cat: or id: term narrows the "
                "search only when every match must have it, not inside an OR), so the bot would have to check "
                f"every stored paper against it. {NARROWING}"
            )
        stored = await self.store.papers.count()
        limit = self.limits.broad_limit(stored)
        found = await self.store.topics.count_candidates(
            query.to_fts5(), categories=categories, cap=limit + 1
        )
        if found > limit:
            raise QueryTooBroad(
                f"`{shown_query(query)}` is too broad: the bot would have to check more than {limit:,} of the "
                f"{stored:,} stored papers for it. {NARROWING}"
            )

    async def save(self, plan: TopicPlan) -> tuple[TopicRow, int]:
        """Carry out a plan: create the topic or give it its new query, and match the stored history. Returns
        the topic and how many stored papers it matches now (0 when nothing changed)."""
        if plan.current is not None and not plan.changes_query:
            return plan.current, 0
        self._check_rate(plan.guild_id)  # again: another change may have come in since the plan
        now = self.clock.now()
        if plan.current is None:
            try:
                row = await self.store.topics.create(
                    guild_id=plan.guild_id,
                    name=plan.name,
                    description=plan.description,
                    query=plan.query.text,
                    at=now,
                )
            except TopicNameTaken:  # created meanwhile, by another command
                self._check_new_name(plan.name, await self.store.topics.own(plan.guild_id), [])
                raise TopicError(f"This server already has a topic named like “{plan.name}”.") from None
        else:
            try:
                row, _ = await self.store.topics.change(plan.current.id, query=plan.query.text, at=now)
            except LookupError:
                raise TopicError(
                    f"“{plan.name}” was deleted meanwhile: run /follow again to create it."
                ) from None
        self._recent_changes(plan.guild_id).append(now)
        self._register(row.id, plan.query)
        return row, await self.match_history(row.id, plan.query)

    async def save_custom(
        self, guild_id: int, name: str, query_text: str, description: str = ""
    ) -> tuple[TopicRow, int]:
        """Create or change a server's own topic (plan_custom, then save)."""
        return await self.save(await self.plan_custom(guild_id, name, query_text, description))

    async def delete_custom(self, topic: TopicRow) -> None:
        """Delete a server's own topic (its matches go with it); the caller checks that nothing follows it."""
        if topic.is_catalog:
            raise TopicError(f"“{topic.name}” is a catalog topic: it cannot be deleted.")
        await self.store.topics.delete(topic.id)
        self._forget(topic.id)

    # ---- matching --------------------------------------------------------------------------------------

    async def match_history(self, topic_id: int, query: TopicQuery, since: datetime | None = None) -> int:
        """Match every stored paper (FTS5 prefilter, then the exact evaluator in a worker thread, a batch at
        a time, each batch's matches written in a short transaction); returns the matches added. Stops early
        when the topic gets another query or is deleted meanwhile: that change matches the history itself."""
        categories = await self.stored_categories(query)
        if categories is None:
            return 0  # it needs a category no stored paper has
        registered = topic_id in self.queries
        added = 0
        batches = self.store.topics.candidates(
            query.to_fts5(), categories=categories, since=since, batch=HISTORY_BATCH
        )
        async for batch in batches:
            current = self.queries.get(topic_id)
            if current != query and (current is not None or registered):
                log.debug("topic %d changed during its history match: stopped", topic_id)
                break
            verdicts = await asyncio.to_thread(matching, query, batch)
            hits = [(topic_id, p.arxiv_id) for p, hit in zip(batch, verdicts, strict=True) if hit]
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

    # ---- reading the history -----------------------------------------------------------------------------

    async def latest(self, topic_id: int, count: int) -> list[Paper]:
        """A topic's newest `count` papers (1 to MAX_LATEST)."""
        check_latest_count(count)
        return await self.store.topics.latest_papers(topic_id, count)

    async def search(
        self,
        query: TopicQuery,
        *,
        topic_id: int | None = None,
        since: datetime | None = None,
        want: int = 50,
    ) -> SearchResult:
        """The `want` best stored matches of a query, best first. Candidates come from the full-text index in
        growing batches and are confirmed by the exact evaluator (in a worker thread) until `want` are found,
        none is left, or `limits.search_candidates` were checked (then the result is not complete)."""
        categories = await self.stored_categories(query)
        if categories is None:  # a category no stored paper has: nothing can match
            return SearchResult([], 0, True)
        bound = self.limits.search_candidates
        fts = query.to_fts5()
        found: list[SearchHit] = []
        checked, size = 0, 500
        while checked < bound:
            size = min(size, bound - checked)
            batch = await self.store.search.ranked(
                fts, topic_id=topic_id, categories=categories, since=since, limit=size, offset=checked
            )
            checked += len(batch)
            verdicts = await asyncio.to_thread(matching, query, [hit.paper for hit in batch])
            found += [hit for hit, ok in zip(batch, verdicts, strict=True) if ok]
            if len(found) >= want:
                return SearchResult(found[:want], checked, True)
            if len(batch) < size:
                return SearchResult(found, checked, True)
            size *= 2
        more = await self.store.search.ranked(
            fts, topic_id=topic_id, categories=categories, since=since, limit=1, offset=checked
        )
        return SearchResult(found, checked, not more)

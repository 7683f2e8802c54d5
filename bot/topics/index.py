"""The topic index: every topic's query and place in the tree, kept in step with the store, and what it matches.

It syncs the catalog into the store at start, matches new papers as they are stored (the intake calls it inside
the papers' transaction), and matches a topic's whole history when it is created or its query changes. Reading
the history for a query is one loop, `confirmed`: the full-text prefilter's candidates, a batch at a time,
confirmed by the exact evaluator in a worker thread, so a long scan never holds the event loop. History matching,
/search and the CLI's `match` all read through it.

The tree (bot/topic_tree.py) is applied when matches are written, not when they are read: a paper that a
topic's own query matches is stored for that topic and for each ancestor of the same owner (the catalog, or one
server), marked as held through a descendant. So posts, /latest, /search topic:, /momentum and its share stay
plain queries over stored rows, and cost what they cost without a tree. When a topic's query, place or existence
changes, the rows its ancestors hold through it are recomputed from the stored own matches (no query is evaluated
again). A server's own topic under a catalog topic leaves the catalog topic's rows alone, so other servers see
the catalog as it is: inside that server the catalog topic counts it at read time (`within`) and its follows
there receive its papers (`PaperMatches.in_server`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime

from bot.clock import Clock
from bot.models import CATALOG_GUILD, Paper, TopicRow, UpsertResult
from bot.store import Store
from bot.topic_tree import Hierarchy
from bot.topics.catalog import CatalogTopic, check_catalog_tree, stored_query
from bot.topics.confirm import confirmed
from bot.topics.matcher import Matcher
from bot.topics.query import TopicQuery

log = logging.getLogger(__name__)
HISTORY_BATCH = 1000  # papers evaluated per trip to the worker thread
# New papers are matched on the event loop (the index is mutated there too, so no thread may read it), a
# slice at a time with a yield between slices: ~100 papers cost ~15 ms, so a 2,000-paper page never holds
# commands back for more than that.
MATCH_SLICE = 100
_COUNT_ALL = 1 << 62  # count every candidate (once per history match, for its progress)


def categories_in(query: TopicQuery, stored: Sequence[str]) -> list[str] | None:
    """Of the `stored` category names, those the query binds its matches to ([] when it binds none; None when
    it needs categories none of them is). Queries are case-insensitive; stored names are not."""
    wanted = query.categories()
    if not wanted:
        return []
    return [name for name in stored if name.casefold() in wanted] or None


def _itself(paper: Paper) -> Paper:
    return paper


@dataclass
class HistoryProgress:
    """How far a topic's history match has come: candidates checked of those the full-text index gave."""

    checked: int = 0
    total: int = 0  # 0 until counted (a topic queued, its turn not come yet)
    changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # set at each step

    @property
    def share(self) -> float:
        return min(1.0, self.checked / self.total) if self.total else 0.0

    def advance(self, checked: int) -> None:
        self.checked += checked
        self.changed.set()


@dataclass(frozen=True)
class CatchUp:
    """The history work still running in the background: topics left and the share of their candidates done."""

    topics: int
    share: float


@dataclass(frozen=True)
class PaperMatches:
    """What new papers matched, by arXiv id: `topics`, the topics that now hold each paper (their own query
    matched it, or a descendant's of the same owner did: the stored rows); `in_server`, (catalog topic, server)
    pairs for a paper of a server's own topic under a catalog topic: it counts for that catalog topic in that
    server only, so that server's follows of the catalog topic receive it and no other server's do."""

    topics: dict[str, set[int]] = field(default_factory=dict)
    in_server: dict[str, set[tuple[int, int]]] = field(default_factory=dict)


class TopicIndex:
    """Topic id -> query and parent for every stored topic, with the matcher that fans new papers out to them."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.matcher = Matcher()
        self._queries: dict[int, TopicQuery] = {}
        self._parents: dict[int, int | None] = {}
        self._owners: dict[int, int] = {}  # topic id -> its guild (CATALOG_GUILD for the catalog's)
        self._tree: Hierarchy[int] | None = None
        self._progress: dict[int, HistoryProgress] = {}  # topics whose history is being (or to be) matched
        self._catching_up = asyncio.Lock()  # one history worker at a time: the queue is matched in order
        self._workers: set[asyncio.Task[int]] = set()  # background catch-ups (a custom topic's history)

    async def start(self, catalog: Sequence[CatalogTopic], *, history_later: bool = False) -> None:
        """Store the catalog with its tree, load every topic, recompute what the ancestors of topics that moved
        hold through them, and match the history of catalog topics that are new or changed (or, with
        `history_later`, queue it for `catch_up`, which the bot runs in the background once it answers
        commands). Raises CatalogError naming the topic whose parent is unknown or makes a cycle."""
        # One process at a time (several may start at once on one database): the catalog's rows are stored in
        # one transaction, which also keeps a half-stored catalog from being seen.
        async with self.store.transaction():
            await self.store.topics.lock_catalog()
            changed, moved, saved = await self._store_catalog(catalog)
            await self.store.topics.queue_history(changed, self.clock.now())
        queries = {saved[t.slug].id: t.query for t in catalog}
        for row in await self.store.topics.all():
            known = queries.get(
                row.id
            )  # else a server's topic, or one gone from the catalog: its stored query
            self.register(
                row, known if known is not None else stored_query(row.query, is_catalog=row.is_catalog)
            )
        for topic_id in await self.store.topics.history_queue():  # with those a restart interrupted
            self._progress.setdefault(topic_id, HistoryProgress())
        await self.rebuild(
            ancestor
            for topic_id in moved
            if topic_id is not None and topic_id in self._owners
            for ancestor in self.lineage(topic_id)
        )
        if not history_later:
            await self.catch_up()

    async def _store_catalog(
        self, catalog: Sequence[CatalogTopic]
    ) -> tuple[list[int], list[int | None], dict[str, TopicRow]]:
        """Write the catalog's topics and their tree; returns the topics whose query changed, those that moved
        (with their former parents) and every catalog row by slug."""
        for row, slug in await self.store.topics.rekey_legacy():
            log.info(
                "topic %d (%s) of server %d: slug %r is now %r",
                row.id,
                row.name,
                row.guild_id,
                row.slug,
                slug,
            )
        earlier = await self.store.topics.own(CATALOG_GUILD)
        check_catalog_tree(catalog, earlier)  # before anything is written
        saved: dict[str, TopicRow] = {row.slug: row for row in earlier}
        changed: list[int] = []
        for topic in catalog:
            row, is_changed = await self.store.topics.save(
                guild_id=CATALOG_GUILD,
                slug=topic.slug,
                name=topic.name,
                description=topic.description,
                query=topic.query.text,
                at=self.clock.now(),
            )
            saved[topic.slug] = row
            if is_changed:
                changed.append(row.id)
        moved: list[int | None] = []  # catalog topics that moved, and their former parents
        for topic in catalog:
            row = saved[topic.slug]
            parent = saved[topic.parent].id if topic.parent is not None else None
            if await self.store.topics.set_parent(row.id, parent, self.clock.now()):
                moved += [row.id, row.parent_id]
        return changed, moved, saved

    async def catch_up(self) -> int:
        """Match the history of every queued topic, a batch at a time (each a short transaction, with the
        event loop free between), then recompute what their ancestors hold; topics queued meanwhile are matched
        too. Returns the matches added. A topic leaves the queue only once its current query is matched, so a
        restart (or a query changed midway) matches it again and nothing is lost."""
        async with self._catching_up:
            added = 0
            while queue := await self.store.topics.history_queue():
                done: list[int] = []
                for topic_id in queue:
                    self._progress.setdefault(topic_id, HistoryProgress())
                for topic_id in queue:
                    query = self._queries.get(topic_id)
                    if query is not None:
                        added += await self.match_history(topic_id, query, rebuild=False)
                        done.append(topic_id)
                    if self._queries.get(topic_id) not in (None, query):
                        continue  # given another query meanwhile: it stays queued, matched again next round
                    await self.store.topics.history_matched(topic_id)
                    if self._queries.get(topic_id) not in (None, query):  # changed during that write
                        await self.store.topics.queue_history([topic_id], self.clock.now())
                        continue
                    self._settle(topic_id)
                await self.rebuild(
                    ancestor
                    for topic_id in done
                    if topic_id in self._owners
                    for ancestor in self.lineage(topic_id)
                )
            return added

    def _settle(self, topic_id: int) -> None:
        progress = self._progress.pop(topic_id, None)
        if progress is not None:
            progress.changed.set()  # whoever waits for it (a /follow reply, a retraining) sees it done

    async def match_soon(
        self,
        topic_id: int,
        query: TopicQuery,
        *,
        on_progress: Callable[[HistoryProgress], None] | None = None,
        now_up_to: int = HISTORY_BATCH,
    ) -> bool:
        """Match a topic's history now when its candidates fit in `now_up_to` (one batch: the answer can say
        what it holds), else queue it for the background worker (`match_later`). Returns whether it was
        matched now."""
        categories = await self.stored_categories(query)
        if categories is not None:
            candidates = await self.store.topics.count_candidates(
                query.to_fts5(), categories=categories, cap=now_up_to + 1
            )
            if candidates > now_up_to:
                await self.match_later([topic_id])
                return False
        await self.match_history(topic_id, query, on_progress=on_progress)
        return True

    async def match_later(self, topic_ids: Sequence[int]) -> asyncio.Task[int]:
        """Queue these topics' history in the store (a restart resumes it) and match it in the background,
        after what is queued before; `history_progress` shows how far it has come. Returns the worker."""
        await self.store.topics.queue_history(topic_ids, self.clock.now())
        for topic_id in topic_ids:
            self._progress.setdefault(topic_id, HistoryProgress()).changed.set()
        worker = asyncio.create_task(self.catch_up(), name="history matching")
        self._workers.add(worker)
        worker.add_done_callback(self._worker_done)
        return worker

    def _worker_done(self, worker: asyncio.Task[int]) -> None:
        self._workers.discard(worker)
        if not worker.cancelled() and worker.exception() is not None:  # the queue stays: a restart resumes
            log.error("matching a topic's history failed", exc_info=worker.exception())

    async def settled(self, topic_id: int) -> None:
        """Wait until the topic's history is matched (at once when it is not queued or being matched)."""
        while (progress := self._progress.get(topic_id)) is not None:
            progress.changed.clear()
            await progress.changed.wait()

    async def stop(self) -> None:
        """Stop the background history work (the queue stays in the store: the next start resumes it)."""
        for worker in list(self._workers):
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)

    def history_progress(self, topic_id: int) -> HistoryProgress | None:
        """How far the match of the topic's history has come; None when it is not being matched."""
        return self._progress.get(topic_id)

    def catching_up(self) -> CatchUp | None:
        """The history matching still to finish (catalog topics after a start, a new topic's); None when none."""
        if not self._progress:
            return None
        checked = sum(p.checked for p in self._progress.values())
        total = sum(p.total for p in self._progress.values())
        share = min(1.0, checked / total) if total and all(p.total for p in self._progress.values()) else 0.0
        return CatchUp(len(self._progress), share)

    def register(self, topic: TopicRow, query: TopicQuery) -> None:
        """A topic created or given a new query: new papers are matched against it from now on."""
        self._queries[topic.id] = query
        self.matcher.add(topic.id, query)
        self._owners[topic.id] = topic.guild_id
        self._parents[topic.id] = topic.parent_id
        self._tree = None

    def forget(self, topic_id: int) -> None:
        """A deleted topic; its children move to the top, as the store moves them."""
        self._queries.pop(topic_id, None)
        self._owners.pop(topic_id, None)
        self.matcher.remove(topic_id)
        self._parents.pop(topic_id, None)
        for child, parent in self._parents.items():
            if parent == topic_id:
                self._parents[child] = None
        self._tree = None

    def query(self, topic_id: int) -> TopicQuery | None:
        """The query of a topic, or None for a topic deleted meanwhile."""
        return self._queries.get(topic_id)

    def queries(self) -> dict[int, str]:
        """Every topic's query text by id (what the learned scorer checks its models against)."""
        return {topic_id: query.text for topic_id, query in self._queries.items()}

    # ---- the tree ------------------------------------------------------------------------------------------

    @property
    def tree(self) -> Hierarchy[int]:
        """Every known topic by id, catalog and servers'. Raises HierarchyError when the links are broken."""
        if self._tree is None:
            self._tree = Hierarchy(dict(self._parents))
        return self._tree

    def lineage(self, topic_id: int) -> list[int]:
        """The topic and its ancestors of the same owner: the topics that hold a paper its query matches."""
        owner = self._owners[topic_id]
        found = [topic_id]
        for ancestor in self.tree.ancestors(topic_id):
            if self._owners[ancestor] != owner:
                break  # a server's own topic under a catalog topic: the catalog's rows stay the catalog's
            found.append(ancestor)
        return found

    def catalog_ancestors(self, topic_id: int) -> list[int]:
        """For a server's own topic, the catalog topics above it (it counts for them in its server only)."""
        if self._owners[topic_id] == CATALOG_GUILD:
            return []
        return [a for a in self.tree.ancestors(topic_id) if self._owners[a] == CATALOG_GUILD]

    def within(self, topic_id: int, guild_id: int) -> list[int]:
        """The topics whose papers count as this topic's in a server, besides its own rows: for a catalog
        topic, the server's own topics below it ([] otherwise: stored rows already hold the rest)."""
        if guild_id == CATALOG_GUILD or self._owners.get(topic_id) != CATALOG_GUILD:
            return []
        return [
            t for t, owner in self._owners.items() if owner == guild_id and topic_id in self.tree.ancestors(t)
        ]

    def same_owner_descendants(self, topic_id: int) -> list[int]:
        owner = self._owners[topic_id]
        return [d for d in self.tree.descendants(topic_id) if self._owners[d] == owner]

    async def rebuild(self, topic_ids: Iterable[int]) -> None:
        """Recompute what each topic holds through its descendants (each once, known topics only)."""
        for topic_id in dict.fromkeys(topic_ids):
            if topic_id in self._owners:
                await self.store.topics.rebuild_inherited(
                    topic_id, self.same_owner_descendants(topic_id), self.clock.now()
                )

    async def move(self, topic_id: int, parent_id: int | None) -> None:
        """A topic the store has put under `parent_id` (None: at the top): its old and new ancestors' rows
        follow. The caller checked the move (no cycle)."""
        before = self.lineage(topic_id)[1:]
        self._parents[topic_id] = parent_id
        self._tree = None
        await self.rebuild([*before, *self.lineage(topic_id)[1:]])

    # ---- new papers ----------------------------------------------------------------------------------------

    async def record_matches(self, result: UpsertResult, papers: Sequence[Paper]) -> PaperMatches:
        """Inside the papers' transaction: match those that are new or have a new version, record the matches
        for the closure (each topic's lineage), and return them. Returned, not kept here: a /paper lookup may
        store a paper while a poll is between its two steps."""
        changed_ids = set(result.new) | set(result.updated)
        changed = [p for p in papers if p.arxiv_id in changed_ids]
        direct: dict[str, set[int]] = {}
        for start in range(0, len(changed), MATCH_SLICE):
            if start:
                await asyncio.sleep(0)  # let a command in between two slices
            for arxiv_id, topic_ids in self.matcher.match_many(changed[start : start + MATCH_SLICE]).items():
                direct.setdefault(arxiv_id, set()).update(topic_ids)
        found = PaperMatches()
        own: list[tuple[int, str]] = []
        through: set[tuple[int, str]] = set()
        for arxiv_id, ids in direct.items():
            held = found.topics.setdefault(arxiv_id, set())
            for topic_id in sorted(ids):
                own.append((topic_id, arxiv_id))
                lineage = self.lineage(topic_id)
                held.update(lineage)
                through.update((a, arxiv_id) for a in lineage[1:])
                guild = self._owners[topic_id]
                for catalog_topic in self.catalog_ancestors(topic_id):
                    found.in_server.setdefault(arxiv_id, set()).add((catalog_topic, guild))
        await self.store.topics.add_matches(own, self.clock.now(), through=sorted(through - set(own)))
        return found

    def topics_matching(self, paper: Paper) -> set[int]:
        """Ids of the topics whose own query matches the paper now."""
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
        async with aclosing(self._confirmed_history(query, since=since, batch=batch)) as confirming:
            async for _checked, papers in confirming:
                yield papers

    async def _confirmed_history(
        self,
        query: TopicQuery,
        *,
        since: datetime | None = None,
        batch: int = HISTORY_BATCH,
        progress: HistoryProgress | None = None,
    ) -> AsyncGenerator[tuple[int, list[Paper]], None]:
        """(candidates checked, those confirmed) a batch at a time; `progress` is given the candidates' total
        first."""
        categories = await self.stored_categories(query)
        if categories is None:
            return  # it needs a category no stored paper has
        fts = query.to_fts5()
        if progress is not None:
            progress.total = await self.store.topics.count_candidates(
                fts, categories=categories, since=since, cap=_COUNT_ALL
            )
            progress.changed.set()
        candidates = self.store.topics.candidates(fts, categories=categories, since=since, batch=batch)
        async with aclosing(confirmed(query, candidates, _itself)) as confirming:
            async for checked, papers in confirming:
                yield checked, papers

    async def match_history(
        self,
        topic_id: int,
        query: TopicQuery,
        since: datetime | None = None,
        *,
        rebuild: bool = True,
        on_progress: Callable[[HistoryProgress], None] | None = None,
    ) -> int:
        """Record every stored paper the query matches, for the topic and its lineage, each batch's matches in
        a short transaction; returns the topic's own matches added. Then (with `rebuild`) the topic's rows held
        through its descendants and its ancestors' rows held through it are recomputed. Stops early when the
        topic gets another query or is deleted meanwhile: that change matches the history itself.
        `on_progress` is called after each batch (a /follow reply shows how far it has come)."""
        registered = topic_id in self._queries
        added = 0
        complete = True
        progress = self._progress.setdefault(topic_id, HistoryProgress())
        try:
            added, complete = await self._match_batches(
                topic_id, query, since, registered, progress, on_progress
            )
        finally:
            if self._progress.get(topic_id) is progress:
                del self._progress[topic_id]
            progress.changed.set()
        if complete and rebuild and topic_id in self._owners:
            await self.rebuild(self.lineage(topic_id))
        log.debug("topic %d: %d papers of the history match", topic_id, added)
        return added

    async def _match_batches(
        self,
        topic_id: int,
        query: TopicQuery,
        since: datetime | None,
        registered: bool,
        progress: HistoryProgress,
        on_progress: Callable[[HistoryProgress], None] | None,
    ) -> tuple[int, bool]:
        added = 0
        history = self._confirmed_history(query, since=since, progress=progress)
        async with aclosing(history) as confirming:
            async for checked, papers in confirming:
                # Checked inside the write: a query change registers before its store change drops the
                # matches, so no batch of the old query is written after that.
                async with self.store.transaction():
                    current = self._queries.get(topic_id)
                    if current != query and (current is not None or registered):
                        log.debug("topic %d changed during its history match: stopped", topic_id)
                        return added, False
                    above = self.lineage(topic_id)[1:] if topic_id in self._owners else []
                    added += await self.store.topics.add_matches(
                        [(topic_id, p.arxiv_id) for p in papers],
                        self.clock.now(),
                        through=[(a, p.arxiv_id) for a in above for p in papers],
                    )
                progress.advance(checked)
                if on_progress is not None:
                    on_progress(progress)
        return added, True

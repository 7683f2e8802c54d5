"""Topics as a server sees them: finding one by name, the tree they form, suggesting names as someone types, and
creating, changing, placing or deleting a server's own topics within its limits.

Every history scan is bounded before it starts: a server's topic must have a word the full-text index can use,
and may not need more than a bounded share of the stored papers checked.

A server's own topic may sit under a catalog topic or under another of its own (`parent`). Under one of its own,
its papers belong to the parent everywhere (both are the server's). Under a catalog topic, they count for that
topic inside the server only: there the catalog topic's posts, /latest, /search topic: and /momentum include
them, while every other server, and the catalog's own figures, see the catalog topic unchanged (see
bot/topics/index.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from bot.clock import Clock
from bot.errors import PaperwatchError
from bot.models import TopicRow, find_named, fold_name, topic_key
from bot.render.limits import AUTOCOMPLETE_CHOICES, CHOICE_NAME_LIMIT
from bot.render.text import clip
from bot.services.topic_paths import PATH_SEPARATOR as PATH_SEPARATOR  # re-exported
from bot.services.topic_paths import TopicTree as TopicTree
from bot.services.topic_paths import topic_tree as topic_tree
from bot.store import Store
from bot.store.protocol import TopicNameTaken
from bot.topics.index import HistoryProgress, TopicIndex
from bot.topics.query import MAX_QUERY_LENGTH as MAX_QUERY_LENGTH  # re-exported: the option's bound
from bot.topics.query import TopicQuery, parse_query
from bot.topics.scorer import TopicScorer, query_only
from bot.topics.scorer_training import LearnedScorer

log = logging.getLogger(__name__)

MAX_NAME_LENGTH = 80
MAX_DESCRIPTION_LENGTH = 1000
MAX_SUGGESTIONS = AUTOCOMPLETE_CHOICES
MAX_CHOICE_LENGTH = CHOICE_NAME_LIMIT
SHOWN_QUERY = 100  # characters of a query an error message repeats
CHANGE_WINDOW = timedelta(hours=1)
NO_PARENT = "none"  # parent:none puts a server's topic back at the top
_EVER = (datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC))


@dataclass(frozen=True)
class TopicLimits:
    """What one server may ask of the bot. Each history scan costs CPU in proportion to its candidates."""

    custom_topics: int = 50  # a server's own topics
    changes_per_hour: int = 10  # topics created or given a new query, per server
    broad_share: float = 0.25  # a topic may need at most this share of the stored papers checked...
    broad_floor: int = 1_000  # ...but any topic may need this many (a small history is cheap to scan)...
    history_candidates: int = 50_000  # ...and none more than this
    search_candidates: int = 10_000  # papers one /search checks before it answers with what it found
    search_ranked: int = 2_000  # newest candidates one /search ranks: beyond, a best-first sample

    def broad_limit(self, stored: int) -> int:
        """The most candidates a topic's history scan may have, with `stored` papers in the store."""
        return min(self.history_candidates, max(self.broad_floor, int(stored * self.broad_share)))


class TopicError(PaperwatchError):
    """A topic cannot be created, changed or found as asked."""


class TopicLimitReached(TopicError):
    """The server reached one of its limits (topics, changes per hour)."""


class QueryTooBroad(TopicError):
    """The query would have the bot check too much of the stored history."""


class UnknownTopic(TopicError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"There is no topic named “{name[:80]}”. Start typing and pick one from the list, or create your own "
            "with /follow topic:<new name> query:<arXiv query>."
        )


@dataclass(frozen=True)
class TopicPlan:
    """A checked request to create or change a server's own topic; `TopicService.save` carries it out."""

    guild_id: int
    name: str
    description: str
    query: TopicQuery
    current: TopicRow | None  # the server's topic of that very name: this changes it
    parent: TopicRow | None = None  # the topic it sits under once the plan is carried out

    @property
    def changes_query(self) -> bool:
        return self.current is None or self.current.query != self.query.text

    @property
    def changes_parent(self) -> bool:
        before = self.current.parent_id if self.current is not None else None
        return before != (self.parent.id if self.parent is not None else None)

    @property
    def changes_anything(self) -> bool:
        return self.changes_query or self.changes_parent


def slugify(name: str) -> str:
    """A server topic's slug: its name's key (letters and digits of any script, hyphens between)."""
    return topic_key(name)


def clean_name(name: str) -> str:
    """A topic name as kept: runs of white space as one space, 1 to MAX_NAME_LENGTH characters."""
    cleaned = " ".join(name.split())
    if not cleaned or len(cleaned) > MAX_NAME_LENGTH:
        raise TopicError(f"A topic name needs 1 to {MAX_NAME_LENGTH} characters.")
    return cleaned


def check_query(text: str) -> TopicQuery:
    """A topic's query, parsed; QuerySyntaxError carries the position (the error handler draws the caret)."""
    if len(text) > MAX_QUERY_LENGTH:
        raise TopicError(
            f"A query is at most {MAX_QUERY_LENGTH} characters; this one has {len(text)}. "
            "Shorten it, e.g. by dropping rare synonyms."
        )
    return parse_query(text)


def has_index_term(query: TopicQuery) -> bool:
    """Whether the history of this query can be narrowed before evaluating papers: by a full-text term or by
    the categories every match must have. Without either (`a*`, `au:k`, `cat:cs.*`, `id:2401*`), every stored
    paper would be evaluated."""
    return query.to_fts5() is not None or bool(query.categories())


def shown_query(query: TopicQuery) -> str:
    text = " ".join(query.text.split())
    return clip(text, SHOWN_QUERY, words=False).replace("`", "ˋ")


NARROWING = (
    "Narrow it with AND: a distinctive word in ti:, abs: or all:, a prefix of at least 4 letters "
    "(`diffus*`, not `di*`), an author's surname (`au:hinton`) or a category (`cat:cs.LG`); "
    "e.g. `cat:cs.RO AND abs:grasping`."
)


class TopicService:
    def __init__(
        self,
        store: Store,
        index: TopicIndex,
        clock: Clock,
        limits: TopicLimits | None = None,
        scorer: LearnedScorer | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.clock = clock
        self.limits = limits or TopicLimits()
        self.scorer = scorer  # the learned scorer beside the queries (None: queries only)
        self._changes: dict[int, deque[datetime]] = {}  # guild -> times of its recent query changes
        self._retraining: set[asyncio.Task[object]] = set()

    # ---- the learned scorer ------------------------------------------------------------------------------

    def scorer_status(self, topic: TopicRow) -> TopicScorer:
        """Whether the topic has a learned scorer (its suggestions) or is query-only, and why."""
        if self.scorer is None:
            return query_only(topic.query, "the learned scorer is off")
        return self.scorer.status(topic.id, topic.query)

    def query_only(self, topics: Sequence[TopicRow]) -> set[int]:
        """Of these topics, those the trained scorer left without a model (no suggestions); none before the
        first training, when every topic is simply waiting for it."""
        if self.scorer is None or self.scorer.needs_training:
            return set()
        return {t.id for t in topics if not self.scorer_status(t).scored}

    async def retrain(self) -> dict[int, int]:
        """Train every topic's scorer now and renew their stored suggestions (the daily job; `scorer train`).
        Returns how many suggestions each topic holds."""
        if self.scorer is None:
            return {}
        return await self.scorer.refresh()

    def retrain_soon(self, topic_id: int) -> asyncio.Task[object] | None:
        """A topic with a new query: its scorer is trained again (and its suggestions renewed) in the
        background; until then it is query-only (the model's query differs). Returns the task."""
        if self.scorer is None or self.scorer.needs_training:
            return None  # no model yet: the scheduler's first training covers every topic
        task: asyncio.Task[object] = asyncio.create_task(self._retrain(topic_id))
        self._retraining.add(task)
        task.add_done_callback(self._retraining.discard)
        return task

    async def retrained(self) -> None:
        """Wait until the retraining started by query changes so far is done (tests, a clean stop)."""
        await asyncio.gather(*self._retraining)

    async def _retrain(self, topic_id: int) -> object:
        assert self.scorer is not None
        try:
            await self.index.settled(topic_id)  # it learns from the topic's matches: all of them
            return await self.scorer.refresh([topic_id])
        except Exception:  # a failed retrain leaves the topic query-only; the daily job tries again
            log.exception("retraining the scorer of topic %d failed", topic_id)
            return None

    # ---- finding -------------------------------------------------------------------------------------------

    async def find(self, guild_id: int, name: str) -> TopicRow | None:
        """The topic a server means by `name`: its own first, then the catalog's (see TopicRepo.find)."""
        return await self.store.topics.find(guild_id, name)

    async def resolve(self, guild_id: int, name: str) -> TopicRow:
        """Like `find`, but a name that means no topic is an UnknownTopic error."""
        topic = await self.find(guild_id, name)
        if topic is None:
            raise UnknownTopic(name)
        return topic

    async def visible_to(self, guild_id: int) -> list[TopicRow]:
        """The catalog and the server's own topics, by name (guild 0: the catalog alone)."""
        return await self.store.topics.visible_to(guild_id)

    async def followed_in(self, guild_id: int) -> list[TopicRow]:
        """The topics some channel of a server follows, each once, by name."""
        return await self.store.topics.followed_in(guild_id)

    async def own(self, guild_id: int) -> list[TopicRow]:
        """A server's own topics, by name."""
        return await self.store.topics.own(guild_id)

    async def tree(self, guild_id: int) -> TopicTree:
        """The topics a server can see, as a tree (guild 0: the catalog's)."""
        return topic_tree(await self.visible_to(guild_id))

    async def suggest(self, guild_id: int, typed: str) -> list[tuple[str, str]]:
        """(label, name) of the topics a server can see whose place in the tree ("Parent › Child") contains
        what was typed, first by where it appears (a match of the slug alone last), then in the tree's order:
        typing a parent's name offers the parent, then its children. At most MAX_SUGGESTIONS; each label
        within Discord's MAX_CHOICE_LENGTH."""
        wanted = fold_name(typed)
        tree = await self.tree(guild_id)
        scored = []
        for order, (_, topic) in enumerate(tree.rows):
            label = tree.label(topic.id)
            where = fold_name(PATH_SEPARATOR.join(tree.path(topic.id))).find(wanted) if wanted else 0
            if where < 0 and wanted in topic.slug:
                where = 10_000
            if where >= 0:
                scored.append((where, order, label, topic.name))
        scored.sort()
        return [(label, name) for _, _, label, name in scored[:MAX_SUGGESTIONS]]

    # ---- a server's own topics ---------------------------------------------------------------------------

    async def plan_custom(
        self,
        guild_id: int,
        name: str,
        query_text: str | None,
        description: str = "",
        parent: str | None = None,
    ) -> TopicPlan:
        """Check a request to create or change a server's own topic, without changing anything. `query_text`
        None keeps the query of an existing topic; `parent` names the topic it goes under (NO_PARENT: at the
        top; None: where it is). Raises QuerySyntaxError (with a position) for a bad query and a TopicError
        saying what to do otherwise."""
        name = clean_name(name)
        if len(description) > MAX_DESCRIPTION_LENGTH:
            raise TopicError(f"A description is at most {MAX_DESCRIPTION_LENGTH} characters.")
        query = check_query(query_text) if query_text is not None else None
        own = await self.store.topics.own(guild_id)
        current = next((t for t in own if fold_name(t.name) == fold_name(name)), None)
        if current is None:
            if query is None:
                raise UnknownTopic(name)
            self._check_new_name(name, own, await self.store.topics.own(0))
            if len(own) >= self.limits.custom_topics:
                raise TopicLimitReached(self._too_many_text(own))
        elif query is None:
            query = parse_query(current.query)
        under = await self._parent(guild_id, name, current, parent)
        plan = TopicPlan(
            guild_id, name if current is None else current.name, description, query, current, under
        )
        if plan.changes_anything:
            self._check_rate(guild_id)
        if plan.changes_query:
            await self.check_scope(query)
        return plan

    async def _parent(
        self, guild_id: int, name: str, current: TopicRow | None, asked: str | None
    ) -> TopicRow | None:
        """The topic a server's topic goes under: the one asked for, checked, or where it is now."""
        if asked is None:
            if current is None or current.parent_id is None:
                return None
            return await self.store.topics.get(current.parent_id)
        if fold_name(asked) == NO_PARENT:
            return None
        if topic_key(asked) == topic_key(name) or (current is not None and find_named([current], asked)):
            raise TopicError(
                f"“{name}” cannot be its own parent. Pick the topic it belongs under, e.g. a catalog topic such "
                f"as RL Post-Training, or parent:{NO_PARENT} to keep it at the top."
            )
        parent = await self.find(guild_id, asked)
        if parent is None:
            raise TopicError(
                f"There is no topic named “{asked[:80]}” to put “{name}” under. Start typing in parent: and pick "
                f"a catalog topic or one of this server's own (parent:{NO_PARENT} keeps it at the top)."
            )
        if current is not None and current.id in self.index.tree.ancestors(parent.id):
            raise TopicError(
                f"“{parent.name}” sits under “{current.name}”, so “{current.name}” cannot go under it: a topic "
                f"cannot be below itself. Move “{parent.name}” first (/follow topic:{parent.name} "
                f"parent:{NO_PARENT}), or pick another parent."
            )
        return parent

    def lineage_in_server(self, topic_id: int) -> list[int]:
        """The topics a paper of this one counts for in its server: itself and every ancestor."""
        return [topic_id, *self.index.tree.ancestors(topic_id)]

    def affected_by(self, plan: TopicPlan) -> set[int]:
        """Topics whose papers in the plan's server change when it is carried out: the topic with everything
        above it, where it is and where it goes."""
        if not plan.changes_anything:
            return set()
        affected: set[int] = set()
        if plan.current is not None:
            affected.update(self.lineage_in_server(plan.current.id))
        if plan.parent is not None:
            affected.update(self.lineage_in_server(plan.parent.id))
        return affected

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
        categories = await self.index.stored_categories(query)
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

    async def save(
        self,
        plan: TopicPlan,
        on_progress: Callable[[HistoryProgress], None] | None = None,
        *,
        history_later: bool = False,
    ) -> tuple[TopicRow, int]:
        """Carry out a plan: create the topic, or give it its new query (matching the stored history) or its new
        place (recomputing what the ancestors it leaves and joins hold through it). Returns the topic and how
        many stored papers it holds now (0 when nothing changed). With `history_later`, a history longer than
        a batch is matched in the background (TopicIndex.match_soon; `index.history_progress` follows it)."""
        if plan.current is not None and not plan.changes_anything:
            return plan.current, 0
        self._check_rate(plan.guild_id)  # again: another change may have come in since the plan
        now = self.clock.now()
        parent_id = plan.parent.id if plan.parent is not None else None
        left: list[int] = []  # the ancestors it leaves, whose rows held through it go
        if plan.current is None:
            try:
                row = await self.store.topics.create(
                    guild_id=plan.guild_id,
                    name=plan.name,
                    description=plan.description,
                    query=plan.query.text,
                    at=now,
                    parent_id=parent_id,
                )
            except TopicNameTaken:  # created meanwhile, by another command
                self._check_new_name(plan.name, await self.store.topics.own(plan.guild_id), [])
                raise TopicError(f"This server already has a topic named like “{plan.name}”.") from None
        else:
            left = self.index.lineage(plan.current.id)[1:]
            if plan.changes_query:  # first: a history match of the old query stops before its next write
                self.index.register(plan.current, plan.query)
            try:
                row, _ = await self.store.topics.change(plan.current.id, query=plan.query.text, at=now)
                if plan.changes_parent:
                    await self.store.topics.set_parent(row.id, parent_id, now)
                    row = replace(row, parent_id=parent_id)
            except LookupError:
                self.index.forget(plan.current.id)
                raise TopicError(
                    f"“{plan.name}” was deleted meanwhile: run /follow again to create it."
                ) from None
        self._recent_changes(plan.guild_id).append(now)
        self.index.register(row, plan.query)
        if plan.changes_query:
            if history_later:
                await self.index.match_soon(row.id, plan.query, on_progress=on_progress)
            else:
                await self.index.match_history(row.id, plan.query, on_progress=on_progress)
            self.retrain_soon(row.id)
        if plan.changes_parent:
            await self.index.rebuild([*left, *self.index.lineage(row.id)[1:]])
        return row, await self.store.topics.count_matches(row.id, *_EVER)

    async def save_custom(
        self,
        guild_id: int,
        name: str,
        query_text: str | None,
        description: str = "",
        parent: str | None = None,
    ) -> tuple[TopicRow, int]:
        """Create, change or place a server's own topic (plan_custom, then save)."""
        return await self.save(await self.plan_custom(guild_id, name, query_text, description, parent))

    async def delete_custom(self, topic: TopicRow) -> None:
        """Delete a server's own topic (its matches go with it, its children move to the top); the caller
        checks that nothing follows it."""
        if topic.is_catalog:
            raise TopicError(f"“{topic.name}” is a catalog topic: it cannot be deleted.")
        above = self.index.lineage(topic.id)[1:] if topic.id in self.index.tree else []
        await self.store.topics.delete(topic.id)
        self.index.forget(topic.id)
        await self.index.rebuild(above)

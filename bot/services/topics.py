"""Topics as a server sees them: finding one by name, suggesting names as someone types, and creating, changing
or deleting a server's own topics within its limits.

Every history scan is bounded before it starts: a server's topic must have a word the full-text index can use,
and may not need more than a bounded share of the stored papers checked.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.errors import PaperwatchError
from bot.models import TopicRow, find_named, fold_name, topic_key
from bot.store import Store
from bot.store.protocol import TopicNameTaken
from bot.topics.index import TopicIndex
from bot.topics.query import MAX_QUERY_LENGTH as MAX_QUERY_LENGTH  # re-exported: the option's bound
from bot.topics.query import TopicQuery, parse_query

MAX_NAME_LENGTH = 80
MAX_DESCRIPTION_LENGTH = 1000
MAX_SUGGESTIONS = 25  # Discord's limit for autocomplete
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

    @property
    def changes_query(self) -> bool:
        return self.current is None or self.current.query != self.query.text


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
    return (text[:97] + "…" if len(text) > 100 else text).replace("`", "ˋ")


NARROWING = (
    "Narrow it with AND: a distinctive word in ti:, abs: or all:, a prefix of at least 4 letters "
    "(`diffus*`, not `di*`), an author's surname (`au:hinton`) or a category (`cat:cs.LG`); "
    "e.g. `cat:cs.RO AND abs:grasping`."
)


class TopicService:
    def __init__(
        self, store: Store, index: TopicIndex, clock: Clock, limits: TopicLimits | None = None
    ) -> None:
        self.store = store
        self.index = index
        self.clock = clock
        self.limits = limits or TopicLimits()
        self._changes: dict[int, deque[datetime]] = {}  # guild -> times of its recent query changes

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

    async def suggest(self, guild_id: int, typed: str) -> list[str]:
        """Names of the topics a server can see that contain what was typed, first by where it appears (a match
        of the slug alone last), catalog topics before the server's own at the same place."""
        wanted = fold_name(typed)
        scored = []
        for topic in await self.visible_to(guild_id):
            where = fold_name(topic.name).find(wanted) if wanted else 0
            if where < 0 and wanted in topic.slug:
                where = 100
            if where >= 0:
                scored.append((where, not topic.is_catalog, topic.name))
        scored.sort()
        return [name for _, _, name in scored[:MAX_SUGGESTIONS]]

    # ---- a server's own topics ---------------------------------------------------------------------------

    async def plan_custom(
        self, guild_id: int, name: str, query_text: str, description: str = ""
    ) -> TopicPlan:
        """Check a request to create or change a server's own topic, without changing anything. Raises
        QuerySyntaxError (with a position) for a bad query and a TopicError saying what to do otherwise."""
        name = clean_name(name)
        if len(description) > MAX_DESCRIPTION_LENGTH:
            raise TopicError(f"A description is at most {MAX_DESCRIPTION_LENGTH} characters.")
        query = check_query(query_text)
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
        self.index.register(row.id, plan.query)
        return row, await self.index.match_history(row.id, plan.query)

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
        self.index.forget(topic.id)

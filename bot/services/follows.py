"""Follows: which channels of a server receive which topics' new papers, and how.

Following is two steps, so that every mistake is found before anything changes (and, in Discord, before the
answer is deferred, so it stays private): `plan` checks the input, finds the topic or plans the server's own
(through the topic use cases, with their limits), and names the channels whose posts a changed query would
change; `follow` carries the plan out. Who may do it (Discord permissions) is the caller's to check between the
two: the plan holds the plain data that decision needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from bot.clock import Clock
from bot.errors import PaperwatchError
from bot.models import Follow, MatchKind, Mode, TopicRow
from bot.services.topics import TopicPlan, TopicService, clean_name
from bot.store import Store
from bot.topics.index import HistoryProgress as HistoryProgress  # re-exported: what /follow shows of it

MODES: tuple[Mode, ...] = ("each", "digest")
DEFAULT_DIGEST_HOUR = 8
MATCHES: tuple[MatchKind, ...] = ("exact", "suggested")
# What a follow receives unless asked: the query's matches. Measured on held-out labelled papers (README, "The
# learned scorer"), the scorer's suggestions moved RL Post-Training from 93.4% to 94.5% recall at 92.4% -> 90.5%
# precision: too close to the 90% floor to be everyone's default; a server opts in per follow.
DEFAULT_MATCH: MatchKind = "exact"
_EVER = (datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC))


class FollowError(PaperwatchError):
    """A follow cannot be made or ended as asked."""


def check_mode(mode: str) -> Mode:
    for known in MODES:
        if mode == known:
            return known
    raise FollowError(f"mode is how papers are posted: {' or '.join(MODES)}.")


def check_match(match: str) -> MatchKind:
    for known in MATCHES:
        if match == known:
            return known
    raise FollowError(
        "match is what a follow receives: exact (the topic's query matches) or suggested (also papers the "
        "learned scorer finds close to the topic's papers, marked as suggested)."
    )


def check_digest_hour(hour: int) -> int:
    if isinstance(hour, bool) or not isinstance(hour, int) or not 0 <= hour <= 23:
        raise FollowError("digest_hour is an hour of the day in UTC, 0 to 23.")
    return hour


@dataclass(frozen=True)
class FollowPlan:
    """A checked request to follow a topic in a channel; `FollowService.follow` carries it out."""

    guild_id: int
    channel_id: int
    mode: Mode
    digest_hour: int
    created_by: int | None
    topic: TopicRow | None  # an existing topic, followed as it is...
    topic_plan: TopicPlan | None  # ...or the server's own, created, changed or placed first
    # Channels of this server following a topic whose papers the plan changes (the topic itself, or one above
    # it where it is or where it goes): what each of them receives changes.
    guarded: tuple[int, ...] = ()
    match: MatchKind = DEFAULT_MATCH  # the query's matches, or also the learned scorer's suggestions
    channel_type: int | None = (
        None  # the channel's kind (Discord's channel type), recorded for the deliverers
    )

    @property
    def changed_topic(self) -> TopicRow | None:
        """The topic whose query the plan changes, if it changes one."""
        plan = self.topic_plan
        return plan.current if plan is not None and plan.changes_query else None

    @property
    def topic_name(self) -> str:
        if self.topic is not None:
            return self.topic.name
        assert self.topic_plan is not None  # a plan names a topic or plans one
        return self.topic_plan.name


@dataclass(frozen=True)
class Followed:
    """What a follow did: the follow (new or updated) and what happened to its topic on the way."""

    topic: TopicRow
    follow: Follow
    is_new: bool  # the channel did not follow the topic before
    created_topic: bool  # the server's own topic was created for it
    changed_query: bool  # the server's own topic got a new query (its history matched again)
    matched: int  # stored papers the created or changed topic matches
    moved: bool = False  # the server's own topic was put under another (or back at the top)
    parent: TopicRow | None = None  # the topic it sits under, when it was created or moved
    # The topic's history still being matched in the background (`matched` counts what is done so far); None
    # when it was matched before the answer.
    matching: HistoryProgress | None = None


@dataclass(frozen=True)
class UnfollowPlan:
    guild_id: int
    topic: TopicRow
    channel_id: int | None  # None: every channel of the server
    following: tuple[Follow, ...]  # every follow of the topic in this server

    @property
    def ending(self) -> list[Follow]:
        """The follows this unfollow ends."""
        return [f for f in self.following if self.channel_id is None or f.channel_id == self.channel_id]

    @property
    def deletes_topic(self) -> bool:
        """The server's own topic that nothing follows any more: unfollowing it again deletes it."""
        return not self.following and self.channel_id is None and not self.topic.is_catalog

    @property
    def ends_every_follow(self) -> bool:
        return len(self.ending) == len(self.following)


class FollowService:
    def __init__(self, store: Store, topics: TopicService, clock: Clock) -> None:
        self.store = store
        self.topics = topics
        self.clock = clock

    async def in_server(self, guild_id: int) -> list[Follow]:
        """A server's follows, by topic name then channel."""
        return await self.store.follows.for_guild(guild_id)

    async def plan(
        self,
        guild_id: int,
        channel_id: int,
        topic: str,
        *,
        query: str | None = None,
        mode: str = "each",
        digest_hour: int = DEFAULT_DIGEST_HOUR,
        created_by: int | None = None,
        parent: str | None = None,
        match: str = DEFAULT_MATCH,
        channel_type: int | None = None,
    ) -> FollowPlan:
        """Check a request to follow `topic` (a name) in a channel, without changing anything. With `query`, the
        topic is the server's own, created or given that query; with `parent`, the server's own topic goes
        under that topic (see TopicService.plan_custom). Raises the topic use cases' errors (unknown topic or
        parent, a parent that would make a loop, a bad or too broad query, a limit reached) and FollowError."""
        checked_mode = check_mode(mode)
        checked_match = check_match(match)
        check_digest_hour(digest_hour)
        name = clean_name(topic)
        if query is None and parent is None:
            row = await self.topics.resolve(guild_id, name)
            return FollowPlan(
                guild_id,
                channel_id,
                checked_mode,
                digest_hour,
                created_by,
                row,
                None,
                match=checked_match,
                channel_type=channel_type,
            )
        if query is None:
            row = await self.topics.resolve(guild_id, name)
            if row.is_catalog:
                raise FollowError(
                    f"“{row.name}” is a catalog topic: its place in the tree is the catalog's. To put a topic of "
                    f"this server under it, use /follow topic:<your topic> parent:{row.name}."
                )
        topic_plan = await self.topics.plan_custom(guild_id, name, query, parent=parent)
        plan = FollowPlan(
            guild_id,
            channel_id,
            checked_mode,
            digest_hour,
            created_by,
            None,
            topic_plan,
            match=checked_match,
            channel_type=channel_type,
        )
        affected = self.topics.affected_by(topic_plan)
        following = [f.channel_id for f in await self.in_server(guild_id) if f.topic_id in affected]
        return replace(plan, guarded=tuple(dict.fromkeys(following)))

    async def follow(
        self,
        plan: FollowPlan,
        on_progress: Callable[[HistoryProgress], None] | None = None,
        *,
        history_later: bool = False,
    ) -> Followed:
        """Carry out a plan: create or change the server's topic (matching its history, `on_progress` called
        after each batch; with `history_later`, a history longer than a batch is matched in the background,
        in the store's queue, and `Followed.matching` follows it), then follow it."""
        matched = 0
        if plan.topic_plan is not None:
            topic, matched = await self.topics.save(plan.topic_plan, on_progress, history_later=history_later)
        else:
            assert plan.topic is not None  # a plan names a topic or plans one
            topic = plan.topic
        follow, is_new = await self._upsert(
            plan.guild_id,
            plan.channel_id,
            topic,
            plan.mode,
            plan.digest_hour,
            plan.created_by,
            plan.match,
            plan.channel_type,
        )
        topic_plan = plan.topic_plan
        created = topic_plan is not None and topic_plan.current is None
        moved = topic_plan is not None and topic_plan.current is not None and topic_plan.changes_parent
        return Followed(
            topic,
            follow,
            is_new,
            created,
            plan.changed_topic is not None,
            matched,
            moved=moved,
            parent=topic_plan.parent if topic_plan is not None else None,
            matching=self.topics.index.history_progress(topic.id) if topic_plan is not None else None,
        )

    async def history_steps(self, topic: TopicRow) -> AsyncIterator[float]:
        """While the topic's history is matched in the background: the share done, at once and after each
        step (a step taken while the caller was busy is folded into the next); ends when it is matched."""
        index = self.topics.index
        while (progress := index.history_progress(topic.id)) is not None:
            yield progress.share
            if index.history_progress(topic.id) is progress:
                progress.changed.clear()
                await progress.changed.wait()

    async def matched(self, topic: TopicRow) -> int:
        """How many stored papers the topic holds (once its history is matched: what a /follow reply shows)."""
        return await self.store.topics.count_matches(topic.id, *_EVER)

    async def follow_topic(
        self,
        guild_id: int,
        channel_id: int,
        topic: TopicRow,
        *,
        mode: str = "each",
        digest_hour: int = DEFAULT_DIGEST_HOUR,
        created_by: int | None = None,
        match: str = DEFAULT_MATCH,
    ) -> tuple[Follow, bool]:
        """Follow a topic already found (the terminal's follows); returns the follow and whether it is new."""
        return await self._upsert(
            guild_id,
            channel_id,
            topic,
            check_mode(mode),
            check_digest_hour(digest_hour),
            created_by,
            check_match(match),
        )

    async def _upsert(
        self,
        guild_id: int,
        channel_id: int,
        topic: TopicRow,
        mode: Mode,
        digest_hour: int,
        created_by: int | None,
        match: MatchKind = DEFAULT_MATCH,
        channel_type: int | None = None,
    ) -> tuple[Follow, bool]:
        """Follow, or change how an existing follow posts and what it receives (which also clears a broken
        mark); `channel_type`, when known, is recorded for the channel."""
        return await self.store.follows.upsert(
            guild_id=guild_id,
            channel_id=channel_id,
            topic_id=topic.id,
            mode=mode,
            digest_hour=digest_hour,
            created_by=created_by,
            at=self.clock.now(),
            match=match,
            channel_type=channel_type,
        )

    # ---- unfollowing ---------------------------------------------------------------------------------------

    async def plan_unfollow(self, guild_id: int, topic: str, channel_id: int | None = None) -> UnfollowPlan:
        """Find what unfollowing `topic` (in one channel, or the whole server) would end, changing nothing."""
        row = await self.topics.resolve(guild_id, topic)
        following = tuple(f for f in await self.in_server(guild_id) if f.topic_id == row.id)
        return UnfollowPlan(guild_id, row, channel_id, following)

    async def unfollow(self, plan: UnfollowPlan) -> int:
        """End the plan's follows; returns how many ended. Their pending posts go with them."""
        return await self.store.follows.remove(plan.guild_id, plan.topic.id, plan.channel_id)

    async def delete_topic(self, plan: UnfollowPlan) -> None:
        """Delete the server's own topic that nothing follows any more (`plan.deletes_topic`)."""
        if not plan.deletes_topic:
            raise FollowError(f"“{plan.topic.name}” is still followed or is a catalog topic: it stays.")
        await self.topics.delete_custom(plan.topic)

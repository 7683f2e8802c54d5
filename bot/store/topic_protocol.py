"""The store's repositories for what servers follow: topics (with their tree, queries and matches) and the
follows of their channels. Part of the `Store` protocol (bot.store.protocol), whose contracts hold here too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from bot.models import (
    Follow,
    MatchKind,
    Mode,
    Paper,
    TopicRow,
)


class TopicRepository(Protocol):
    """Topics and their matches. Topics form a tree (`TopicRow.parent_id`, checked by the caller with
    bot.topic_tree); matches are stored for the closure: a topic holds its own query's matches and,
    marked as held through a descendant, those of its descendants of the same owner (catalog or one server)."""

    async def save(
        self, *, guild_id: int, slug: str, name: str, description: str, query: str, at: datetime
    ) -> tuple[TopicRow, bool]:
        """Insert or update a topic by (guild, slug): the catalog's way, where the slug is the identity.
        Returns it and whether its query changed or it is new; a changed query drops the recorded matches.
        Saving an unchanged topic writes nothing (the catalog is saved at every start)."""

    async def create(
        self,
        *,
        guild_id: int,
        name: str,
        description: str,
        query: str,
        at: datetime,
        parent_id: int | None = None,
    ) -> TopicRow:
        """A new topic of a server (under `parent_id`, if given), its slug the name's `topic_key`. Never
        replaces a topic: raises TopicNameTaken when the server has one whose name has the same key."""

    async def change(self, topic_id: int, *, query: str, at: datetime) -> tuple[TopicRow, bool]:
        """A new query for a topic, and whether it differs from the old one; when it does, the recorded
        matches are dropped (the caller matches the history again). Raises LookupError for an unknown id."""

    async def set_parent(self, topic_id: int, parent_id: int | None, at: datetime) -> bool:
        """Put a topic under another (None: at the top) and return whether that moved it. Matches are not
        touched (see rebuild_inherited). Raises LookupError for an unknown topic."""

    async def get(self, topic_id: int) -> TopicRow | None:
        """A topic by id; None if there is none."""

    async def own(self, guild_id: int) -> list[TopicRow]:
        """A server's own topics (CATALOG_GUILD: the catalog's), by folded name."""

    async def find(self, guild_id: int, name_or_slug: str) -> TopicRow | None:
        """The topic a server means by a name (`find_named`), its own before the catalog's, so a catalog
        topic never hides a server's own."""

    async def visible_to(self, guild_id: int) -> list[TopicRow]:
        """The catalog and the server's own topics, by folded name, without the catalog topics named like
        one of the server's own (same key)."""

    async def count_own(self, guild_id: int) -> int:
        """How many topics a server has of its own."""

    async def lock_catalog(self) -> None:
        """Inside a transaction: wait until no other process is storing the catalog, and keep them waiting until
        the transaction ends (processes starting at once on one database store it one after the other)."""

    async def rekey_legacy(self) -> list[tuple[TopicRow, str]]:
        """Give topics saved before names were keyed their name's key as slug (a taken key gets "-<id>"
        appended) and return (topic, new slug) for each changed. A store that never held such topics
        returns []."""

    async def all(self) -> list[TopicRow]:
        """Every topic, catalog and servers', by id."""

    async def delete(self, topic_id: int) -> None:
        """Delete a topic with its matches and follows; its children move to the top. Idempotent."""

    async def add_matches(
        self, pairs: Sequence[tuple[int, str]], at: datetime, *, through: Sequence[tuple[int, str]] = ()
    ) -> int:
        """Record (topic id, arxiv id) matches of the topics' own queries and, from `through`, matches an
        ancestor holds through a descendant, in one transaction; return how many own matches were new.
        Idempotent: a recorded match stays as it was, except that one held through a descendant becomes the
        topic's own when its own query matches too; a pair naming a deleted topic or an unstored paper is
        dropped."""

    async def rebuild_inherited(self, topic_id: int, descendants: Sequence[int], at: datetime) -> None:
        """Make the matches a topic holds through descendants exactly the own matches of `descendants` (its
        descendants of the same owner), after one of them changed query, place or was deleted. Its own
        matches stay. One transaction; no query is evaluated."""

    async def matched_ids(self, topic_id: int) -> list[str]:
        """The arXiv ids of the topic's exact matches (own and through descendants), in no particular order:
        what its learned scorer learns from."""

    async def add_suggestions(self, pairs: Sequence[tuple[int, str]], at: datetime) -> int:
        """Record (topic id, arxiv id) pairs the topic's learned scorer suggests (kind 'suggested'); a paper
        the topic already holds stays as it is. Returns how many are new. Suggestions are the topic's own: they
        are not inherited by ancestors (each topic's scorer suggests for itself), and every reader that counts
        (`count_matches`, `counts_between`, `matched_ids`, search by topic) reads exact matches only."""

    async def replace_suggestions(self, topic_id: int, arxiv_ids: Sequence[str], at: datetime) -> int:
        """Make the topic's suggestions exactly `arxiv_ids` (exact matches stay), in one transaction; returns
        how many it holds now."""

    async def suggested_among(self, topic_ids: Sequence[int], arxiv_ids: Sequence[str]) -> set[str]:
        """Of these papers, those the topics hold only as suggestions."""

    async def count_suggested(
        self, topic_ids: Sequence[int], start: datetime, end: datetime
    ) -> dict[int, int]:
        """Each topic's suggested papers submitted (v1) in [start, end) (what /momentum shows beside its
        counts), in one round trip; a topic without any gets 0."""

    async def count_matches(self, topic_id: int, start: datetime, end: datetime) -> int:
        """The topic's matched papers submitted (v1) in [start, end)."""

    async def counts_between(
        self,
        topic_ids: Sequence[int],
        bounds: Sequence[datetime],
        *,
        including: Mapping[int, Sequence[int]] | None = None,
    ) -> dict[int, list[int]]:
        """Matches of each topic in each window between consecutive ascending `bounds` ([b0, b1), [b1, b2),
        ...), by v1 submission time, in one round trip whatever the number of topics; a topic without matches
        gets zeros. A topic's count also takes, each paper once, the papers of the topics `including` lists
        for it. Raises ValueError for fewer than two bounds."""

    async def day_counts(self, topic_ids: Sequence[int], first: int, last: int) -> dict[int, list[int]]:
        """Each topic's exact matches on each unix day (published // 86400) in [first, last), kept per day in
        the store (forgotten when a match of that day changes): a read of a row per topic and day."""

    async def followed_in(self, guild_id: int) -> list[TopicRow]:
        """The topics some channel of a server follows, each once, ordered by folded name."""

    async def latest_papers(
        self,
        topic_id: int,
        limit: int,
        offset: int = 0,
        *,
        including: Sequence[int] = (),
        suggested: bool = False,
    ) -> list[Paper]:
        """The topic's exact matches (with `suggested`, its suggestions too; with, each once, those of the
        topics `including` names), newest submission first, from the `offset`-th on, at most `limit`. Raises
        ValueError for a negative limit or offset."""

    async def queue_history(self, topic_ids: Sequence[int], at: datetime) -> None:
        """Remember that these topics' stored history is still to be matched (kept across restarts)."""

    async def history_queue(self) -> list[int]:
        """Topics whose history is still to be matched, oldest request first (deleted topics leave it)."""

    async def history_matched(self, topic_id: int) -> None:
        """The topic's history is matched: it leaves the queue."""

    async def count_candidates(
        self, fts: str | None, *, categories: Sequence[str] = (), since: datetime | None = None, cap: int
    ) -> int:
        """How many papers `candidates` would yield, counted up to `cap` at most (asking costs at most
        `cap` rows, however broad the prefilter)."""

    def candidates(
        self,
        fts: str | None,
        *,
        categories: Sequence[str] = (),
        since: datetime | None = None,
        batch: int = 5000,
    ) -> AsyncIterator[list[Paper]]:
        """Stored papers that may match (passing the prefilter, of any of the categories, submitted since),
        each once, in batches of at most `batch`, so a history of a million papers never sits in memory."""
        ...


class FollowRepository(Protocol):
    async def upsert(
        self,
        *,
        guild_id: int,
        channel_id: int,
        topic_id: int,
        mode: Mode,
        digest_hour: int,
        created_by: int | None,
        at: datetime,
        match: MatchKind = "exact",
        channel_type: int | None = None,
    ) -> tuple[Follow, bool]:
        """Follow a topic in a channel, or change how an existing follow posts and what it receives (`match`:
        the query's matches, or also the learned scorer's suggestions), which also clears its broken mark;
        `channel_type`, the channel's kind (Discord's channel type) when known, is recorded for the channel.
        Returns the follow and whether it is new. Idempotent per (channel, topic)."""

    async def for_guild(self, guild_id: int) -> list[Follow]:
        """A server's follows, broken ones included, by topic name, then channel."""

    async def for_topics(self, topic_ids: list[int]) -> list[Follow]:
        """Working follows of any of these topics (broken ones receive nothing until fixed)."""

    async def remove(self, guild_id: int, topic_id: int, channel_id: int | None = None) -> int:
        """End a server's follows of a topic (in one channel, or in all), in one transaction; returns how
        many ended. Their pending deliveries are dropped unless another follow in the same channel still
        wants the paper."""

    async def mark_broken(self, channel_id: int, reason: str, at: datetime) -> None:
        """Every follow in the channel is broken (Discord refuses the posts) for `reason` (shortened)."""

    async def touch(self, channel_id: int, at: datetime) -> None:
        """Something was posted to the channel at `at`."""

    async def channel_type(self, channel_id: int) -> int | None:
        """The channel's kind (Discord's channel type) as last recorded for it; None when not known (a deliver
        process then asks Discord)."""

    async def set_channel_type(self, channel_id: int, channel_type: int) -> None:
        """Record the channel's kind (Discord's channel type) for every follow in it."""

    async def digest_channels_due(self, hour: int) -> list[int]:
        """Discord channels with a working digest follow posting at this hour (UTC)."""

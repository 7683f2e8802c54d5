"""The store's repositories for what members do with cards: their ratings, their reading lists, and the
candidates "Similar" compares. Part of the `Store` protocol (bot.store.protocol), whose contracts hold here too."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from bot.models import Paper, RatedPaper, SavedPaper, TopicRow, Vote


class RatingRepository(Protocol):
    """Members' 👍 / 👎 on a paper for one topic of their server: one per (server, topic, paper, member)."""

    async def rate(
        self, *, guild_id: int, topic_id: int, arxiv_id: str, member_id: int, vote: Vote, at: datetime
    ) -> Vote | None:
        """Record a member's vote, replacing their earlier one, and return the earlier one (None: first).
        The same vote again writes nothing. Raises LookupError when the topic or the paper is not stored."""

    async def rated(self, guild_id: int, topic_id: int) -> list[RatedPaper]:
        """The papers a server's members rated for a topic, with their votes, last rated first."""

    async def counts(self, guild_id: int, topic_ids: Sequence[int]) -> dict[int, int]:
        """How many ratings each topic holds from a server (0 for none), in one round trip."""

    async def reset(self, guild_id: int, topic_id: int) -> int:
        """Forget a server's ratings of a topic; returns how many there were."""

    async def rated_topics(self) -> list[tuple[int, int]]:
        """Every (server, topic) holding ratings."""

    async def followed_holding(
        self, guild_id: int, arxiv_id: str, channel_ids: Sequence[int]
    ) -> list[TopicRow]:
        """The topics a server follows that hold the paper (matched or suggested): those followed in one of
        `channel_ids` when there are any, else those followed anywhere in the server; by id."""


class SavedRepository(Protocol):
    """Members' reading lists (personal, across servers)."""

    async def save(self, member_id: int, arxiv_id: str, at: datetime) -> bool:
        """Put a stored paper on a member's list; False when it is there already (its save time stays).
        Raises LookupError when the paper is not stored."""

    async def remove(self, member_id: int, arxiv_id: str) -> bool:
        """Take a paper off a member's list; False when it was not on it."""

    async def newest(self, member_id: int, *, limit: int, offset: int = 0) -> list[SavedPaper]:
        """A member's saved papers, newest save first, from the `offset`-th on, at most `limit`. Raises
        ValueError for a negative limit or offset."""

    async def count(self, member_id: int) -> int:
        """How many papers a member has saved."""


class SimilarRepository(Protocol):
    async def candidates(self, arxiv_id: str, words: list[str], *, limit: int) -> list[Paper]:
        """Up to `limit` stored papers other than `arxiv_id` holding any of `words` (plain words, never read
        as query syntax) in title or abstract, those sharing the most first: the bounded set "Similar"
        compares by features."""

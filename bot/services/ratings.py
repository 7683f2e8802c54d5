"""👍 / 👎 on a card: does this paper belong in the topic? Stored per (server, topic, paper, member), shown per
topic in /topics, seen and reset by a server's admins, learned from at the topic's next retraining (only in that
server: bot/topics/scorer_ratings.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.clock import Clock
from bot.errors import PaperwatchError
from bot.models import RatedPaper, TopicRow, Vote
from bot.store import Store


class CardActionError(PaperwatchError):
    """A click on a card that cannot be carried out; the message says why and what to do."""


class PaperGone(CardActionError):
    def __init__(self, arxiv_id: str) -> None:
        super().__init__(
            f"The paper {arxiv_id[:40]} of this card is not stored any more. Run /paper {arxiv_id[:40]} to "
            "fetch it again, then use the buttons of that card."
        )


class NothingToRate(CardActionError):
    def __init__(self) -> None:
        super().__init__(
            "This paper is not in any topic this server follows (the topic or its follow may have been "
            "removed), so there is no topic to rate it for. ⭐ Save and Similar still work."
        )


@dataclass(frozen=True)
class RateOutcome:
    """What a click recorded: the topics rated, and for each the member's earlier vote (None: first)."""

    vote: Vote
    topics: tuple[TopicRow, ...]
    earlier: tuple[Vote | None, ...]

    @property
    def unchanged(self) -> bool:
        return all(e == self.vote for e in self.earlier)


class RatingService:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def rate(
        self,
        *,
        guild_id: int,
        channel_ids: Sequence[int],
        member_id: int,
        arxiv_id: str,
        vote: Vote,
        topic_id: int = 0,
    ) -> RateOutcome:
        """A member's vote on a card of a channel: for each topic the server follows there (else anywhere in
        the server) that holds the paper, or only for `topic_id` when the card names one (0: it does not).
        Raises PaperGone or NothingToRate with what to do."""
        if await self.store.papers.get(arxiv_id) is None:
            raise PaperGone(arxiv_id)
        topics = await self.store.ratings.followed_holding(guild_id, arxiv_id, channel_ids)
        if topic_id:
            topics = [t for t in topics if t.id == topic_id]
        rated: list[TopicRow] = []
        earlier: list[Vote | None] = []
        for topic in topics:
            try:
                before = await self.store.ratings.rate(
                    guild_id=guild_id,
                    topic_id=topic.id,
                    arxiv_id=arxiv_id,
                    member_id=member_id,
                    vote=vote,
                    at=self.clock.now(),
                )
            except LookupError:  # the topic was deleted between the lookup and the vote
                continue
            rated.append(topic)
            earlier.append(before)
        if not rated:
            raise NothingToRate()
        return RateOutcome(vote, tuple(rated), tuple(earlier))

    async def counts(self, guild_id: int, topic_ids: Sequence[int]) -> dict[int, int]:
        """How many ratings each topic holds from this server."""
        return await self.store.ratings.counts(guild_id, list(topic_ids))

    async def rated(self, guild_id: int, topic: TopicRow) -> list[RatedPaper]:
        return await self.store.ratings.rated(guild_id, topic.id)

    async def reset(self, guild_id: int, topic: TopicRow) -> int:
        """Forget this server's ratings of a topic (the next retraining learns without them)."""
        return await self.store.ratings.reset(guild_id, topic.id)

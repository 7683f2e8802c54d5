"""/ask and /brief: answers drawn from the stored papers, with their sources.

Extractive by default (bot/ask: retrieval, then the abstracts' best sentences, each cited). The per-member and
per-server rate limits are checked by the front end that has members (the cog) through `admit`."""

from __future__ import annotations

from datetime import datetime

from bot.answers import Answer, Cited
from bot.ask.limits import RateLimiter
from bot.ask.question import MAX_QUESTION_LENGTH, check_question, content_words, parse_since
from bot.ask.retrieval import retrieve
from bot.ask.sentences import pick_sentences
from bot.clock import Clock
from bot.models import CATALOG_GUILD, Paper, TopicRow
from bot.store import Store
from bot.topics.index import TopicIndex

CLOSEST = 3  # papers listed when no sentence answers


class AskService:
    def __init__(
        self, store: Store, index: TopicIndex, clock: Clock, limiter: RateLimiter | None = None
    ) -> None:
        self.store = store
        self.index = index
        self.clock = clock
        self.limiter = limiter or RateLimiter(clock)

    def admit(self, guild_id: int, member_id: int) -> None:
        """Count a member's question against the rate limits; AskRateLimited says when to try again."""
        self.limiter.admit(guild_id, member_id)

    def since(self, text: str | None) -> datetime | None:
        """A user's `since` (a day, or a span like 4w back from now) as a moment; InvalidSince explains."""
        return parse_since(text, self.clock.now())

    async def ask(
        self,
        question: str,
        *,
        topic: TopicRow | None = None,
        since: datetime | None = None,
        guild_id: int = CATALOG_GUILD,
    ) -> Answer:
        """The extractive answer: the abstracts' sentences that best answer the question, each citing its
        paper, from the stored papers most relevant to it (within `topic` as server `guild_id` sees it, and
        its sub-topics; submitted since `since`)."""
        question = check_question(question)
        retrieved = await retrieve(
            self.store,
            content_words(question),
            topic_id=topic.id if topic is not None else None,
            including=self.index.within(topic.id, guild_id) if topic is not None else (),
            since=since,
        )
        return extractive_answer(question, retrieved.papers, topic, since)


def extractive_answer(
    question: str, papers: list[Paper], topic: TopicRow | None, since: datetime | None
) -> Answer:
    picked = pick_sentences(question, papers)
    numbers: dict[int, int] = {}  # candidate index -> citation number, in order of first citation
    statements = []
    for pick in picked:
        number = numbers.setdefault(pick.paper, len(numbers) + 1)
        statements.append(Cited(pick.text, (number,)))
    cited = tuple(papers[i] for i in numbers) if numbers else tuple(papers[:CLOSEST])
    return Answer(
        question=question,
        statements=tuple(statements),
        papers=cited,
        retrieved=len(papers),
        topic=topic.name if topic is not None else None,
        since=since,
    )


__all__ = ["MAX_QUESTION_LENGTH", "AskService", "check_question", "extractive_answer"]

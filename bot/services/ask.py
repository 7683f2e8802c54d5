"""/ask and /brief: answers drawn from the stored papers, with their sources.

Extractive by default (bot/ask: retrieval, then the abstracts' best sentences, each cited). The per-member and
per-server rate limits are checked by the front end that has members (the cog) through `admit`."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta

from bot.answers import Answer, Brief, Cited
from bot.ask.grounding import ANSWER_SYSTEM, OVERVIEW_SYSTEM, answer_prompt, cited_statements, overview_prompt
from bot.ask.limits import RateLimiter
from bot.ask.llm import ChatModel, ModelUnavailable
from bot.ask.question import MAX_QUESTION_LENGTH, check_question, content_words, parse_since
from bot.ask.retrieval import retrieve
from bot.ask.sentences import pick_sentences
from bot.ask.trends import active_authors, active_institutions, phrase_table, representative, rising_phrases
from bot.clock import Clock
from bot.config import MAX_BRIEF_WEEKS
from bot.errors import PaperwatchError
from bot.models import CATALOG_GUILD, Paper, TopicRow
from bot.store import Store
from bot.topics.index import TopicIndex

CLOSEST = 3  # papers listed when no sentence answers
BEFORE_FACTOR = 2  # the weeks before a brief's period: twice as many, so a phrase's "before" is not noise
BRIEF_SAMPLE = 300  # papers read per window, spread over it: bounds the work on a topic of thousands a month
MODEL_SOURCES = 8  # retrieved papers the model reads
INSTEAD = "these sentences are quoted from the abstracts instead."


def check_brief_weeks(weeks: int) -> None:
    if not 1 <= weeks <= MAX_BRIEF_WEEKS:
        raise PaperwatchError(f"weeks is the period to sum up: a whole number from 1 to {MAX_BRIEF_WEEKS}.")


class AskService:
    def __init__(
        self,
        store: Store,
        index: TopicIndex,
        clock: Clock,
        limiter: RateLimiter | None = None,
        model: ChatModel | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.clock = clock
        self.limiter = limiter or RateLimiter(clock)
        self.model = model  # None: extractive answers only (LLM_BASE_URL unset)

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
        """From the stored papers most relevant to the question (within `topic` as server `guild_id` sees it,
        and its sub-topics; submitted since `since`): the language model's cited answer when one is set up and
        answers, else the extractive one, the abstracts' sentences that best answer it, each citing its paper
        (with a note saying why, when the model failed)."""
        question = check_question(question)
        retrieved = await retrieve(
            self.store,
            content_words(question),
            topic_id=topic.id if topic is not None else None,
            including=self.index.within(topic.id, guild_id) if topic is not None else (),
            since=since,
        )
        # TF-IDF over a few hundred sentences: tens of ms, off the event loop.
        extractive = await asyncio.to_thread(extractive_answer, question, retrieved.papers, topic, since)
        if self.model is None or not retrieved.papers:
            return extractive
        return await self._model_answer(self.model, retrieved.papers[:MODEL_SOURCES], extractive)

    async def _model_answer(self, model: ChatModel, papers: list[Paper], extractive: Answer) -> Answer:
        try:
            reply = await model.complete(ANSWER_SYSTEM, answer_prompt(extractive.question, papers))
        except ModelUnavailable as exc:
            return replace(extractive, note=f"The language model was unavailable ({exc}): {INSTEAD}")
        statements = cited_statements(reply, len(papers))
        if statements is None:
            return replace(
                extractive,
                statements=(),
                papers=tuple(papers[:CLOSEST]),
                by_model=True,
                note="The language model found no answer to this in the papers retrieved.",
            )
        if not statements:
            return replace(
                extractive, note=f"The language model's answer cited none of the papers: {INSTEAD}"
            )
        numbers: dict[int, int] = {}  # source number -> number in the answer, in order of first citation
        for statement in statements:
            for n in statement.sources:
                numbers.setdefault(n, len(numbers) + 1)
        return replace(
            extractive,
            statements=tuple(Cited(s.text, tuple(numbers[n] for n in s.sources)) for s in statements),
            papers=tuple(papers[n - 1] for n in numbers),
            by_model=True,
        )

    async def brief(self, topic: TopicRow, weeks: int = 4, guild_id: int = CATALOG_GUILD) -> Brief:
        """What moved in a topic (as server `guild_id` sees it, with its sub-topics) in the last `weeks`
        weeks: rising phrases against the weeks before, the most active authors and institutions, and the
        papers that represent the period. Reads a sample of BRIEF_SAMPLE papers of a busier window."""
        check_brief_weeks(weeks)
        end = self.clock.now()
        start = end - timedelta(weeks=weeks)
        before = start - timedelta(weeks=weeks * BEFORE_FACTOR)
        including = self.index.within(topic.id, guild_id)

        async def window(lo: datetime, hi: datetime) -> list[Paper]:
            return await self.store.search.in_window(
                topic_id=topic.id, including=including, start=lo, end=hi, limit=BRIEF_SAMPLE
            )

        now_papers, before_papers = await window(start, end), await window(before, start)
        # Counting the phrases of hundreds of abstracts takes a few hundred ms: off the event loop.
        brief = await asyncio.to_thread(
            summarise,
            Brief(
                topic=topic.name,
                weeks=weeks,
                start=start,
                end=end,
                before=before,
                papers_now=len(now_papers),
                papers_before=len(before_papers),
                rising=(),
                authors=(),
                institutions=(),
                representative=(),
            ),
            now_papers,
            before_papers,
        )
        if self.model is None or not brief.representative:
            return brief
        return await self._overview(self.model, brief)

    async def _overview(self, model: ChatModel, brief: Brief) -> Brief:
        """The brief with the model's three cited sentences on top, or a note saying why there are none."""
        papers = brief.representative
        prompt = overview_prompt(brief.topic, [r.phrase for r in brief.rising], papers)
        try:
            reply = await model.complete(OVERVIEW_SYSTEM, prompt)
        except ModelUnavailable as exc:
            return replace(brief, note=f"The language model was unavailable ({exc}): no overview.")
        statements = cited_statements(reply, len(papers))
        if not statements:
            return replace(brief, note="The language model's overview cited none of the papers: left out.")
        return replace(brief, overview=tuple(statements[:3]))


def summarise(empty: Brief, now: list[Paper], before: list[Paper]) -> Brief:
    """A brief's phrases, people and papers from the sampled papers of its two windows."""
    table = phrase_table(now, before)
    return replace(
        empty,
        rising=tuple(rising_phrases(table)),
        authors=tuple(active_authors(now)),
        institutions=tuple(active_institutions(now)),
        representative=tuple(representative(now, table)),
        sampled=BRIEF_SAMPLE in (len(now), len(before)),
    )


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


__all__ = [
    "MAX_BRIEF_WEEKS",
    "MAX_QUESTION_LENGTH",
    "AskService",
    "check_brief_weeks",
    "check_question",
    "extractive_answer",
]

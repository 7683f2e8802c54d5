"""The stored history: a topic's newest papers, searches with an arXiv-style query, every match of a query,
and one paper by id (fetched from arXiv and stored when it is not stored yet)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime

from bot.clock import Clock, SystemClock
from bot.errors import PaperwatchError, ReadTimedOut, SourceError
from bot.intake import Intake
from bot.models import CATALOG_GUILD, Paper, SearchHit, TopicRow, fold_name
from bot.models import HIGHLIGHT_END as HIGHLIGHT_END  # re-exported: a hit's snippet marks
from bot.models import HIGHLIGHT_START as HIGHLIGHT_START
from bot.services.topics import TopicError, TopicLimits
from bot.sources.arxiv_api import ArxivClient
from bot.store import Store
from bot.topics.confirm import confirmed
from bot.topics.index import TopicIndex
from bot.topics.query import TopicQuery

MAX_LATEST = 50  # papers one /latest lists
MAX_SEARCH_RESULTS = 50  # hits one /search shows
FIRST_SEARCH_BATCH = (
    100  # candidates of a search's first trip to the evaluator (twice a page); each next doubles
)
# Wall time a search may spend (ranking, then confirming candidates) before it answers with what it found, as a
# partial result: a query the index cannot narrow (a word in most papers ANDNOT another in most) would check
# thousands. The first batch is always checked.
SEARCH_BUDGET_SECONDS = 0.12
MAX_SEARCH_BATCH = 400  # the budget is checked between batches: a batch is what it may overrun by (~50 ms)
COUNT_CAP = 20_000  # how far a search counts its candidates (~10 ms at 1M): beyond, "more than 20,000"
# The count's own time, past the search's budget when confirming used it: ~10 ms for a common word at 1M, but FTS5
# finds a prefix most words start with (`dodo*`) by merging all their entries first, seconds at a million papers.
COUNT_BUDGET_SECONDS = 0.05


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]  # confirmed matches, best first
    checked: int  # candidates the exact evaluator looked at
    complete: bool  # every candidate was checked, or `want` were found among those ranked
    # When more candidates passed the full-text index than one search ranks (limits.search_candidates), the
    # hits are the best of the newest `sampled_from` of them: a best-first sample of `candidates` (counted up
    # to COUNT_CAP: `candidates_capped`). None: every candidate was ranked.
    sampled_from: int | None = None
    candidates: int = 0
    candidates_capped: bool = False
    by_relevance: bool = True  # False: newest first (a query with no words to rank by, e.g. a bare cat:)
    confirmed: int = 0  # of the `checked` candidates, how many the exact evaluator kept
    # Ranking by relevance ran out of time (too many papers passed the full-text index to rank): the hits are the
    # newest stored papers the exact evaluator confirmed, newest first, and `checked` the newest papers read.
    unranked: bool = False

    @property
    def sample(self) -> bool:
        return self.sampled_from is not None

    @property
    def confirmed_share(self) -> float:
        """Of the candidates checked, the share the exact evaluator kept (1.0 when the index was exact)."""
        return self.confirmed / self.checked if self.checked else 1.0


def check_latest_count(count: int) -> None:
    if not 1 <= count <= MAX_LATEST:
        raise TopicError(f"count is how many papers to list: a whole number from 1 to {MAX_LATEST}.")


class HistoryService:
    def __init__(
        self,
        store: Store,
        index: TopicIndex,
        arxiv: ArxivClient,
        intake: Intake,
        limits: TopicLimits | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.clock = clock or SystemClock()
        self.store = store
        self.index = index
        self.arxiv = arxiv
        self.intake = intake
        self.limits = limits or TopicLimits()

    async def latest(self, topic: TopicRow, count: int, guild_id: int = CATALOG_GUILD) -> list[Paper]:
        """A topic's newest `count` papers (1 to MAX_LATEST) as server `guild_id` sees it (a catalog topic
        there includes that server's own topics under it), newest first."""
        check_latest_count(count)
        return await self.store.topics.latest_papers(
            topic.id, count, including=self.index.within(topic.id, guild_id)
        )

    async def latest_with_suggestions(
        self, topic: TopicRow, count: int, guild_id: int = CATALOG_GUILD
    ) -> tuple[list[Paper], set[str]]:
        """Like `latest`, with the learned scorer's suggestions among them; returns the papers and the ids of
        those only suggested (what /latest marks)."""
        check_latest_count(count)
        including = self.index.within(topic.id, guild_id)
        papers = await self.store.topics.latest_papers(topic.id, count, including=including, suggested=True)
        suggested = await self.store.topics.suggested_among(
            [topic.id, *including], [p.arxiv_id for p in papers]
        )
        return papers, suggested

    async def count_matches(self, topic: TopicRow, start: datetime, end: datetime) -> int:
        """A topic's papers first submitted in [start, end)."""
        return await self.store.topics.count_matches(topic.id, start, end)

    async def search(
        self,
        query: TopicQuery,
        *,
        topic: TopicRow | None = None,
        since: datetime | None = None,
        want: int = MAX_SEARCH_RESULTS,
        guild_id: int = CATALOG_GUILD,
    ) -> SearchResult:
        """The `want` best stored matches of a query (among the papers of `topic` as server `guild_id` sees
        it), best first. Candidates come from the full-text index in growing batches and are confirmed by the
        exact evaluator until `want` are found, none is left, `limits.search_candidates` were checked or
        SEARCH_BUDGET_SECONDS have passed (then the result is not complete). Only the newest
        `limits.search_ranked` candidates are ranked, so the cost is bounded by the page, not by the matches:
        with more candidates the result is a best-first sample (`sampled_from`), and says how many there are,
        counted up to COUNT_CAP. A ranking still running when the budget ends is stopped inside the database:
        the answer is then the newest stored papers the evaluator confirms, newest first (`unranked`)."""
        deadline = self.clock.monotonic() + SEARCH_BUDGET_SECONDS  # ranking included
        categories = await self.index.stored_categories(query)
        if categories is None:  # a category no stored paper has: nothing can match
            return SearchResult([], 0, True)
        bound, pool = self.limits.search_candidates, self.limits.search_ranked
        fts = query.to_fts5()
        topic_id = topic.id if topic is not None else None
        including = self.index.within(topic.id, guild_id) if topic is not None else []

        async def newest(offset: int, limit: int) -> list[SearchHit]:
            return await self.store.search.ranked(
                None,
                topic_id=topic_id,
                including=including,
                categories=categories,
                since=since,
                limit=limit,
                offset=offset,
                snippets=False,
            )

        if fts is None:  # no words: newest first straight from the index
            order: list[int] = []
            ranked = newest
        else:
            # Ranked once within the newest `pool` candidates (the cost of a page, however many papers match),
            # then read a batch at a time.
            try:
                order = await self.store.search.ranked_ids(
                    fts,
                    topic_id=topic_id,
                    including=including,
                    categories=categories,
                    since=since,
                    pool=pool,
                    deadline=deadline,
                )
            except ReadTimedOut:
                # The newest papers, each confirmed: true matches, cheaply, in a budget of their own.
                fallback = self.clock.monotonic() + SEARCH_BUDGET_SECONDS
                found, checked, exhausted, _ = await self._confirmed(query, newest, want, bound, fallback)
                shown = await self.store.search.with_snippets(fts, found[:want])
                return SearchResult(
                    shown,
                    checked,
                    exhausted or len(found) >= want,
                    by_relevance=False,
                    confirmed=len(found),
                    unranked=True,
                )

            async def by_rank(offset: int, limit: int) -> list[SearchHit]:
                return await self.store.search.hits(order[offset : offset + limit])

            ranked = by_rank

        found, checked, exhausted, over_budget = await self._confirmed(query, ranked, want, bound, deadline)
        shown = await self.store.search.with_snippets(fts, found[:want])
        if over_budget:
            return SearchResult(shown, checked, False, by_relevance=fts is not None, confirmed=len(found))
        if exhausted and checked < pool:  # every candidate was checked
            return SearchResult(shown, checked, True, by_relevance=fts is not None, confirmed=len(found))
        try:
            candidates = await self.store.search.count(
                fts,
                topic_id=topic_id,
                including=including,
                categories=categories,
                since=since,
                cap=COUNT_CAP,
                deadline=max(deadline, self.clock.monotonic() + COUNT_BUDGET_SECONDS),
            )
            capped = candidates >= COUNT_CAP
        except ReadTimedOut:  # too many to count in time: at least the ranked pool's
            candidates, capped = max(len(order), checked), True
        return SearchResult(
            shown,
            checked,
            len(found) >= want or candidates <= checked,
            sampled_from=pool if candidates > pool or (capped and candidates >= pool) else None,
            candidates=candidates,
            candidates_capped=capped,
            by_relevance=fts is not None,
            confirmed=len(found),
        )

    async def _confirmed(
        self,
        query: TopicQuery,
        ranked: Callable[[int, int], Awaitable[list[SearchHit]]],
        want: int,
        bound: int,
        deadline: float,
    ) -> tuple[list[SearchHit], int, bool, bool]:
        """Candidates in growing batches (`ranked(offset, limit)`), confirmed by the exact evaluator until `want`
        are found, none is left (exhausted), `bound` were checked or the deadline passed after a batch (over
        budget; the first batch is always checked): (found, checked, exhausted, over budget)."""
        exhausted = False

        async def batches() -> AsyncIterator[list[SearchHit]]:
            nonlocal exhausted
            offset, size = 0, FIRST_SEARCH_BATCH
            while offset < bound:
                size = min(size, bound - offset)
                batch = await ranked(offset, size)
                yield batch
                if len(batch) < size:
                    exhausted = True  # the index has no more candidates
                    return
                offset += size
                size = min(2 * size, MAX_SEARCH_BATCH)

        found: list[SearchHit] = []
        checked = 0
        async with aclosing(confirmed(query, batches(), lambda hit: hit.paper)) as confirming:
            async for size, hits in confirming:
                checked += size
                found += hits
                if len(found) >= want:
                    break
                if self.clock.monotonic() > deadline and not exhausted:
                    return found, checked, exhausted, True
        return found, checked, exhausted, False

    async def matches(self, query: TopicQuery, *, since: datetime | None = None) -> list[Paper]:
        """Every stored paper the query matches (submitted since `since`), newest first."""
        found = [paper async for papers in self.index.history(query, since=since) for paper in papers]
        return sorted(found, key=lambda p: p.published, reverse=True)

    # ---- one paper -------------------------------------------------------------------------------------------

    async def stored(self, arxiv_id: str) -> Paper | None:
        """The stored paper of that base id (no version), or None."""
        return await self.store.papers.get(arxiv_id)

    async def fetch(self, arxiv_id: str) -> Paper:
        """A paper not stored yet, from arXiv: stored and matched to topics through the intake, never posted
        (nobody follows a paper someone looked up by hand)."""
        try:
            papers = await self.arxiv.fetch_ids([arxiv_id])
        except SourceError as exc:
            raise PaperwatchError(
                f"arXiv did not answer for {arxiv_id} just now. Please try again in a few minutes."
            ) from exc
        paper = next((p for p in papers if p.arxiv_id == arxiv_id), None)
        if paper is None:
            raise PaperwatchError(
                f"arXiv has no paper {arxiv_id}. Check the id, e.g. on https://arxiv.org/abs/{arxiv_id}."
            )
        await self.intake.store_papers([paper], announce=False)
        return paper

    async def topic_names(self, guild_id: int, paper: Paper) -> list[str]:
        """Names of the most specific topics this server can see (catalog and its own) that the paper matches
        (a paper of On-Policy Distillation names it, not RL Post-Training above it), by name; never another
        server's topics."""
        matching = self.index.topics_matching(paper)
        visible = {t.id: t.name for t in await self.store.topics.visible_to(guild_id)}
        shown = self.index.tree.most_specific(t for t in matching if t in visible)
        return sorted((visible[t] for t in shown), key=fold_name)

"""/search costs a page, not the number of matches: on a store whose matches exceed what one search ranks, a
word most papers contain, a NOT query and a bare cat: still answer with confirmed hits, best first (or newest
first), and the result says it is a best-first sample of how many."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.models import Paper
from bot.services.history import FIRST_SEARCH_BATCH, HistoryService
from bot.services.topics import TopicLimits
from bot.topics.query import PaperText, parse_query
from cogs.history import search_pages
from tests.factories import BASE_TIME, make_paper
from tests.services.world import World

pytestmark = pytest.mark.both_back_ends  # through the Store protocol only

RANKED = 120  # newest candidates one search ranks in these tests (10,000 in the bot)
PAPERS = 400


def crowd() -> list[Paper]:
    """400 papers, 90% containing "ocelot"; every third of those "margay" too; a third in cs.RO.
    Paper n is n hours old, so a larger n is older; pk order follows n (inserted in that order)."""
    papers = []
    for n in range(PAPERS):
        words = ["ocelot"] * (n % 10 != 0) + ["margay"] * (n % 3 == 0) + [f"filler{n}"]
        title = ("Ocelot " * (1 + n % 4) if n % 10 != 0 else "Plain ") + f"study {n}"
        categories = ("cs.RO", "cs.LG") if n % 3 == 1 else ("cs.LG",)
        papers.append(
            make_paper(
                n,
                title=title,
                abstract=" ".join(words) + ".",
                categories=categories,
                primary_category=categories[0],
                published=BASE_TIME - timedelta(hours=n),
            )
        )
    return papers


@pytest.fixture
async def bounded(world: World) -> World:
    # Inserted oldest first, so the newest papers also have the highest rowids, as in a polled store.
    await world.intake.store_papers(list(reversed(crowd())), announce=False)
    return world


def limits() -> TopicLimits:
    return TopicLimits(search_candidates=RANKED, search_ranked=RANKED)


def matches(text: str, papers: list[Paper]) -> list[Paper]:
    query = parse_query(text)
    return [p for p in papers if query.matches(PaperText(p))]


async def test_a_word_most_papers_contain_is_ranked_within_the_newest_and_says_so(bounded: World) -> None:
    history = bounded.rebuilt(limits()).history
    result = await history.search(parse_query("ocelot"), want=20)
    expected = matches("ocelot", crowd())
    assert len(expected) == 360
    assert result.complete and result.sample and result.sampled_from == RANKED
    assert (result.candidates, result.candidates_capped) == (360, False)
    newest = {p.arxiv_id for p in expected[:RANKED]}  # crowd() is newest first
    assert len(result.hits) == 20 and {h.paper.arxiv_id for h in result.hits} <= newest
    # best first: titles saying "ocelot" four times come before those saying it once
    ocelots = [h.paper.title.count("Ocelot") for h in result.hits]
    assert ocelots == sorted(ocelots, reverse=True) and ocelots[0] == 4
    assert all("ocelot" in h.snippet for h in result.hits)  # snippets cut for the hits shown

    header = search_pages("ocelot", result, None, None)[0].content.splitlines()[0]
    assert (
        "360 stored papers match; showing the 20 most relevant of the 120 newest, best match first" in header
    )


async def test_a_not_query_beyond_the_bound_shows_only_true_matches(bounded: World) -> None:
    history = bounded.rebuilt(limits()).history
    result = await history.search(parse_query("ocelot ANDNOT margay"), want=50)
    expected = {p.arxiv_id for p in matches("ocelot ANDNOT margay", crowd())}
    assert len(expected) == 240
    assert len(result.hits) == 50 and {h.paper.arxiv_id for h in result.hits} <= expected
    assert result.sample and result.complete and 0 < result.confirmed_share < 1
    header = search_pages("x", result, None, None)[0].content.splitlines()[0]
    # 360 candidates pass the index; about two thirds of those checked are true matches: an estimate near 240
    estimate = re.search(
        r"an estimated (\d+) stored papers match; showing the 50 most relevant of the 120 newest", header
    )
    assert estimate is not None and 200 <= int(estimate.group(1)) <= 280


async def test_a_bare_category_lists_the_newest_of_that_category_and_counts_them(bounded: World) -> None:
    history = bounded.rebuilt(limits()).history
    result = await history.search(parse_query("cat:cs.RO"), want=10)
    expected = matches("cat:cs.RO", crowd())
    assert [h.paper.arxiv_id for h in result.hits] == [p.arxiv_id for p in expected[:10]]
    assert (result.candidates, result.by_relevance) == (len(expected), False)
    header = search_pages("cat:cs.RO", result, None, None)[0].content.splitlines()[0]
    assert f"{len(expected)} stored papers match; showing the 10 newest, newest first" in header

    # two categories: newest first over their union, each paper once
    both = await history.search(parse_query("cat:cs.RO OR cat:cs.LG"), want=30)
    assert [h.paper.arxiv_id for h in both.hits] == [p.arxiv_id for p in crowd()[:30]]
    since = BASE_TIME - timedelta(hours=50, minutes=30)
    recent = await history.search(parse_query("cat:cs.RO"), since=since, want=50)
    assert [h.paper.arxiv_id for h in recent.hits] == [p.arxiv_id for p in expected if p.published >= since]


async def test_the_count_stops_at_its_cap(bounded: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.services.history.COUNT_CAP", 200)
    result = await bounded.rebuilt(limits()).history.search(parse_query("ocelot"), want=5)
    assert (result.candidates, result.candidates_capped) == (200, True)
    header = search_pages("ocelot", result, None, None)[0].content.splitlines()[0]
    assert "more than 200 stored papers match" in header


class SlowMachine(FakeClock):
    """Every look at the clock finds a second gone: each batch of candidates takes longer than a search may."""

    def monotonic(self) -> float:
        self.advance(1.0)
        return super().monotonic()


async def test_a_search_out_of_time_answers_with_what_it_confirmed_as_partial(bounded: World) -> None:
    history = HistoryService(
        bounded.store, bounded.index, bounded.source, bounded.intake, limits(), clock=SlowMachine()
    )
    # two thirds of the first batch match: fewer than the 80 asked for, so a search on time would go on
    result = await history.search(parse_query("ocelot ANDNOT margay"), want=80)
    expected = {p.arxiv_id for p in matches("ocelot ANDNOT margay", crowd())}
    assert result.checked == FIRST_SEARCH_BATCH and not result.complete  # stopped after one batch
    assert result.hits and {h.paper.arxiv_id for h in result.hits} <= expected
    header = search_pages("x", result, None, None)[0].content.splitlines()[0]
    assert f"of the first {FIRST_SEARCH_BATCH} candidates, so there may be more" in header
    # on time, the same search goes on to find its fifty
    assert (
        len((await bounded.rebuilt(limits()).history.search(parse_query("ocelot ANDNOT margay"))).hits) == 50
    )

"""A /search whose ranking cannot finish within its time budget (the store stops the read: ReadTimedOut) answers
with the newest stored papers the exact evaluator confirms, newest first, and says why and what to do; a search
on time is ranked by relevance as before."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.models import Paper
from bot.services.history import FIRST_SEARCH_BATCH
from bot.services.topics import TopicLimits
from bot.store import SqliteStore
from bot.topics.query import PaperText, parse_query
from cogs.history import search_pages
from tests.database_clock import DatabaseClock
from tests.factories import BASE_TIME, make_paper
from tests.services.world import World, services_world

pytestmark = pytest.mark.both_back_ends  # through the Store protocol only


class BusyDatabase(FakeClock):
    """While `slow`, every look at the clock finds a second gone: a ranking's budget has passed before the store
    starts it (the store's own stop inside the database is tests/store/test_read_deadline.py's)."""

    def __init__(self) -> None:
        super().__init__()
        self.slow = False

    def monotonic(self) -> float:
        if self.slow:
            self._mono += 1.0
        return super().monotonic()


@pytest.fixture
def clock() -> BusyDatabase:
    return BusyDatabase()


def lynxes() -> list[Paper]:
    """300 papers, newest first; two in three say "lynx" (in the abstract once, in the title n % 4 + 1 times),
    the rest not."""
    return [
        make_paper(
            n,
            title=("Lynx " * (1 + n % 4) if n % 3 else "Plain ") + f"survey {n}",
            abstract=("A lynx" if n % 3 else "No cat") + f", filler {n}.",
            published=BASE_TIME - timedelta(hours=n),
        )
        for n in range(300)
    ]


@pytest.fixture
async def stored(world: World) -> World:
    await world.intake.store_papers(list(reversed(lynxes())), announce=False)  # newest last, as polled
    return world


def matching(text: str) -> list[str]:
    query = parse_query(text)
    return [p.arxiv_id for p in lynxes() if query.matches(PaperText(p))]


async def test_a_ranking_out_of_time_answers_with_the_newest_true_matches(
    stored: World, clock: BusyDatabase
) -> None:
    history = stored.services.history
    on_time = await history.search(parse_query("lyn*"), want=20)
    assert on_time.by_relevance and not on_time.unranked
    assert [h.paper.title.count("Lynx") for h in on_time.hits[:5]] == [4] * 5  # best first

    clock.slow = True
    late = await history.search(parse_query("lyn*"), want=20)
    assert late.unranked and not late.by_relevance and late.complete
    assert [h.paper.arxiv_id for h in late.hits] == matching("lyn*")[:20]  # the newest, each a true match
    assert all("lynx" in h.snippet for h in late.hits)  # snippets cut for the hits shown
    header = search_pages("lyn*", late, None, None)[0].content.splitlines()[0]
    assert (
        "the 20 newest matches, ranked newest first: too many papers match to rank by relevance in time"
        in header
    )
    assert "Narrow the query (a rarer word, a longer prefix" in header

    clock.slow = False
    assert await history.search(parse_query("lyn*"), want=20) == on_time  # the next search is unaffected


async def test_out_of_time_twice_it_says_how_far_it_looked(stored: World, clock: BusyDatabase) -> None:
    clock.slow = True  # the fallback's own budget passes after its first batch
    rare = await stored.services.history.search(parse_query("lyn* AND ti:survey AND filler AND 7*"), want=20)
    assert rare.unranked and not rare.complete and rare.checked == FIRST_SEARCH_BATCH
    expected = matching("lyn* AND ti:survey AND filler AND 7*")
    assert [h.paper.arxiv_id for h in rare.hits] == [i for i in expected if int(i[-3:]) < FIRST_SEARCH_BATCH]
    header = search_pages("q", rare, None, None)[0].content.splitlines()[0]
    assert f"among the newest {FIRST_SEARCH_BATCH} stored papers, so there may be more" in header

    none = await stored.services.history.search(parse_query("plain AND lyn*"), want=20)
    assert none.unranked and none.hits == [] and not none.complete
    text = search_pages("plain AND lyn*", none, None, None)[0].content
    assert f"None of the newest {FIRST_SEARCH_BATCH} stored papers matches" in text
    assert "too many papers match to rank by relevance in time" in text and "Narrow the query" in text


@pytest.mark.sqlite_only
async def test_a_count_out_of_time_says_more_than_it_ranked(tmp_path: Path) -> None:
    """Ranking 20 candidates takes SQLite no look at the clock; counting 3,000 takes many, each finding a second
    gone: the ranked page is shown, and the count says "more than" what was ranked."""
    clock = DatabaseClock()
    store = await SqliteStore.open(tmp_path / "paperwatch.sqlite3", clock)
    try:
        async with services_world(store, clock) as world:
            many = [
                make_paper(n, title=f"Lynx survey {n}", abstract=f"A lynx, filler {n}.") for n in range(3000)
            ]
            await world.intake.store_papers(many, announce=False)
            history = world.rebuilt(TopicLimits(search_candidates=20, search_ranked=20)).history
            on_time = await history.search(parse_query("lyn*"), want=5)
            assert (on_time.candidates, on_time.candidates_capped) == (3000, False)

            clock.slow = True
            late = await history.search(parse_query("lyn*"), want=5)
            assert late.hits == on_time.hits and late.by_relevance and not late.unranked
            assert (late.candidates, late.candidates_capped, late.sampled_from) == (20, True, 20)
            header = search_pages("lyn*", late, None, None)[0].content.splitlines()[0]
            assert "more than 20 stored papers match; showing the 5 most relevant of the 20 newest" in header
    finally:
        await store.close()

"""Backfill walks day windows, splits the crowded ones, shows progress and resumes after an interruption."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bot.backfill import Backfill, Progress, day_windows, split_window
from bot.clock import FakeClock
from bot.errors import ArxivUnavailable
from bot.intake import Intake
from bot.loopback.arxiv import LoopbackArxiv, RecordedRequest
from bot.loopback.atom import RawEntry, entry_xml
from bot.sources.arxiv_api import ArxivClient
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.store import Store
from bot.topics.index import TopicIndex
from tests.factories import make_paper
from tests.fakes.hostile import hostile_entry

CATS = ("cs.LG",)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    client = build_http_client("paperwatch-tests/0.1", timeout=5.0)
    yield client
    await client.aclose()


def history(clock: FakeClock, days: int, per_day: int) -> list:
    start = clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
    return [
        make_paper(d * 1000 + i, published=start - timedelta(days=d) + timedelta(minutes=7 * i + 1))
        for d in range(days)
        for i in range(per_day)
    ]


def backfill(
    store: Store,
    arxiv: LoopbackArxiv,
    http: httpx.AsyncClient,
    clock: FakeClock,
    progress: list[Progress],
    page_size: int = 2000,
) -> Backfill:
    client = ArxivClient(PoliteHttp(http, clock, min_interval=3.0, max_tries=2), arxiv.url)
    intake = Intake(store, TopicIndex(store, clock), clock)
    return Backfill(
        store, client, clock, intake=intake, categories=CATS, page_size=page_size, progress=progress.append
    )


def test_windows_cover_each_minute_once() -> None:
    clock = FakeClock()
    windows = day_windows(clock.now(), 3)
    assert len(windows) == 4
    for (start, end), (_older_start, older_end) in itertools.pairwise(windows):
        assert older_end + timedelta(minutes=1) == start and end > start
    halves = split_window(windows[0])
    assert halves[1][0] == windows[0][0] and halves[0][1] == windows[0][1]
    assert halves[1][1] + timedelta(minutes=1) == halves[0][0]


async def test_fills_every_day_and_reports_progress(store: Store, http, clock: FakeClock) -> None:
    papers = history(clock, days=4, per_day=6)
    async with LoopbackArxiv(papers) as arxiv:
        progress: list[Progress] = []
        stored = await backfill(store, arxiv, http, clock, progress).run(days=3)
    assert stored == 24 and await store.papers.count() == 24
    assert [p.windows_left for p in progress] == [3, 2, 1, 0]
    assert progress[0].line().startswith("6 papers stored · 1 window done, 3 left · about ")
    assert progress[-1].line() == "24 papers stored · all 4 windows done"
    assert progress[0].seconds_left is not None and progress[0].seconds_left > 0  # paced by the 3 s interval


async def test_crowded_windows_are_split_until_each_fits_a_page(store: Store, http, clock: FakeClock) -> None:
    papers = history(clock, days=1, per_day=40)
    async with LoopbackArxiv(papers) as arxiv:
        progress: list[Progress] = []
        await backfill(store, arxiv, http, clock, progress, page_size=15).run(days=1)
        pages = [r for r in arxiv.requests if r.endpoint == "api"]
    assert await store.papers.count() == 40
    assert all(int(r.params["max_results"]) == 15 for r in pages)
    windows = await store.backfill.windows("backfill:cs.LG")
    assert all(w.done and w.papers <= 15 for w in windows)
    assert sum(w.papers for w in windows) == 40


async def test_resumes_after_an_interruption_without_refetching(store: Store, http, clock: FakeClock) -> None:
    papers = history(clock, days=5, per_day=3)
    async with LoopbackArxiv(papers) as arxiv:

        def outage_after_two_windows(request: RecordedRequest) -> None:
            if len(arxiv.requests) == 3:
                arxiv.fail_next(503, count=2)  # both tries of the third window fail

        arxiv.on_request = outage_after_two_windows
        with pytest.raises(ArxivUnavailable):
            await backfill(store, arxiv, http, clock, []).run(days=4)
        assert await store.papers.count() == 6
        arxiv.on_request = None
        arxiv.requests.clear()
        progress: list[Progress] = []
        stored = await backfill(store, arxiv, http, clock, progress).run(days=4)
        assert stored == 9 and await store.papers.count() == 15
        again: list[Progress] = []
        assert (
            await backfill(store, arxiv, http, clock, again).run(days=4) == 0
        )  # nothing left: one line says so
        assert [p.line() for p in again] == ["0 papers stored · all 5 windows done"]
        assert len([r for r in arxiv.requests if r.endpoint == "api"]) == 3  # only the windows not done


async def test_unusable_entries_are_skipped_and_recorded_and_every_window_completes(
    store: Store, http, clock: FakeClock
) -> None:
    papers = history(clock, days=3, per_day=4)
    day_one = papers[0].published
    bad = [
        hostile_entry("a version past SQLite's integer", published=day_one + timedelta(minutes=2)),
        hostile_entry(
            "a year-9999 date past the end of time in UTC", published=day_one + timedelta(minutes=3)
        ),
        RawEntry(entry_xml(make_paper(77, published=datetime(2099, 1, 1, tzinfo=UTC))), day_one),
    ]
    async with LoopbackArxiv([*papers, *bad]) as arxiv:
        stored = await backfill(store, arxiv, http, clock, [], page_size=5).run(days=2)
    assert stored == 12 and await store.papers.count() == 12
    assert all(w.done for w in await store.backfill.windows("backfill:cs.LG"))
    summary = await store.sources.skipped_summary("backfill:cs.LG")
    assert summary is not None and summary.entries == 3
    assert await store.papers.get(make_paper(77).arxiv_id) is None

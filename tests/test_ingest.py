"""One poll cycle against a loopback arXiv: paging, the stop condition, the overlap window, new versions,
and faults survived with nothing half-stored and nothing lost."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

import httpx
import pytest

from bot.clock import FakeClock
from bot.ingest import Ingestor
from bot.models import Paper, UpsertResult
from bot.sources.arxiv_api import ArxivClient
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.store import Store
from tests.factories import make_paper
from tests.fakes.arxiv_server import FakeArxiv, RecordedRequest

CATS = ("cs.AI", "cs.LG")


def corpus(clock: FakeClock, count: int, *, start: int = 0, hours_apart: float = 0.05) -> list[Paper]:
    """Papers submitted over the last hours before the clock's now, newest first."""
    now = clock.now()
    return [
        make_paper(start + i, published=now - timedelta(hours=hours_apart * (i + 1))) for i in range(count)
    ]


@pytest.fixture
async def arxiv() -> AsyncIterator[FakeArxiv]:
    async with FakeArxiv() as fake:
        yield fake


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    client = build_http_client("paperwatch-tests/0.1", timeout=5.0)
    yield client
    await client.aclose()


def make_ingestor(
    store: Store, arxiv: FakeArxiv, http: httpx.AsyncClient, clock: FakeClock, **options: object
) -> Ingestor:
    polite = PoliteHttp(http, clock, min_interval=3.0, max_tries=3)
    return Ingestor(store, ArxivClient(polite, arxiv.url), clock, categories=CATS, **options)  # type: ignore[arg-type]


def api_requests(arxiv: FakeArxiv) -> list[dict[str, str]]:
    return [r.params for r in arxiv.requests if r.endpoint == "api"]


async def test_pages_until_the_range_is_walked(
    store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 25)
    report = await make_ingestor(store, arxiv, http, clock, page_size=10).poll_once()
    assert report.complete and report.pages == 3 and report.fetched == 25
    assert sorted(report.new) == sorted(p.arxiv_id for p in arxiv.papers)
    assert await store.papers.count() == 25
    starts = [int(r["start"]) for r in api_requests(arxiv)]
    assert starts == [0, 10, 20]
    query = api_requests(arxiv)[0]["search_query"]
    assert query.startswith("(cat:cs.AI OR cat:cs.LG) AND submittedDate:[")
    assert api_requests(arxiv)[0]["sortBy"] == "submittedDate"
    state = await store.sources.get(report.source)
    assert state.watermark == max(p.published for p in arxiv.papers)
    assert state.last_error is None and state.papers_stored == 25


async def test_stops_at_a_known_page_past_the_overlap_when_the_range_is_ignored(
    store: Store, http, clock: FakeClock
) -> None:
    # A server that ignores submittedDate (arXiv did ignore sortBy for days in 2025): the walk must still end.
    everything = corpus(clock, 30, hours_apart=24)  # 30 days of papers
    async with FakeArxiv(everything) as arxiv:
        arxiv.ignore_date_range = True
        ingestor = make_ingestor(store, arxiv, http, clock, page_size=5, overlap=timedelta(hours=48))
        first = await ingestor.poll_once()
        assert first.complete and first.fetched == 30  # a first poll walks until a page is known and old
        arxiv.requests.clear()
        clock.advance(3600)
        arxiv.papers.insert(0, make_paper(99, published=clock.now() - timedelta(minutes=5)))
        second = await ingestor.poll_once()
        assert second.complete and second.new == [make_paper(99).arxiv_id]
        # page one holds the new paper; page two only known papers older than the overlap: the walk ends there
        assert [int(r["start"]) for r in api_requests(arxiv)] == [0, 5]


async def test_overlap_catches_late_announcements(
    store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 5)
    ingestor = make_ingestor(store, arxiv, http, clock, overlap=timedelta(hours=96))
    await ingestor.poll_once()
    clock.advance(6 * 3600)
    # Announced only now, but submitted three days ago (a Friday submission announced on Sunday evening).
    late = make_paper(50, published=clock.now() - timedelta(days=3))
    fresh = make_paper(51, published=clock.now() - timedelta(minutes=1))
    arxiv.papers += [late, fresh]
    report = await ingestor.poll_once()
    assert sorted(report.new) == sorted([late.arxiv_id, fresh.arxiv_id])
    assert await store.papers.count() == 7


async def test_new_version_updates_and_adds_no_paper(
    store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 3)
    ingestor = make_ingestor(store, arxiv, http, clock)
    await ingestor.poll_once()
    v1 = arxiv.papers[1]
    v2 = make_paper(1, version=2, title="Revised title", published=v1.published, updated=clock.now())
    arxiv.papers[1] = v2
    report = await ingestor.poll_once()
    assert report.new == [] and report.updated == [v1.arxiv_id]
    assert await store.papers.count() == 3
    assert (await store.papers.get(v1.arxiv_id)) == v2


FAULTS = {
    "503": lambda a: a.fail_next(503, count=3),
    "429 with Retry-After": lambda a: a.fail_next(429, count=3, retry_after="30"),
    "429 without Retry-After": lambda a: a.fail_next(429, count=3),
    "truncated XML": lambda a: a.truncate_next(3),
    "reset connection": lambda a: a.reset_next(3),
    "zero entries while more exist": lambda a: a.empty_next(3),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_fault_mid_walk_loses_nothing_and_next_cycle_catches_up(
    fault: str, store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 25)
    ingestor = make_ingestor(store, arxiv, http, clock, page_size=10)

    # Page one is served, then every try of page two fails (3 tries per request).
    def fault_after_first_page(request: RecordedRequest) -> None:
        if len(arxiv.requests) == 2:
            FAULTS[fault](arxiv)

    arxiv.on_request = fault_after_first_page
    report = await ingestor.poll_once()
    assert not report.complete and report.error
    assert await store.papers.count() == 10  # page one committed whole, page two not at all
    state = await store.sources.get(ingestor.source)
    assert state.watermark is None and state.consecutive_failures == 1 and state.last_error

    recovered = await ingestor.poll_once()
    assert recovered.complete
    assert await store.papers.count() == 25
    assert len(set(report.new) | set(recovered.new)) == 25 and not set(report.new) & set(recovered.new)
    assert (await store.sources.get(ingestor.source)).consecutive_failures == 0


async def test_query_error_is_reported_with_the_query(
    store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    arxiv.fail_next(400)
    report = await make_ingestor(store, arxiv, http, clock).poll_once()
    assert not report.complete and "cat:cs.AI" in (report.error or "")
    assert len(api_requests(arxiv)) == 1  # a rejected query is not retried


async def test_crash_between_fetch_and_commit_then_catch_up(
    store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 25)
    calls: list[int] = []

    async def crash_on_second_page(result: UpsertResult, papers: Sequence[Paper]) -> None:
        calls.append(len(papers))
        if len(calls) == 2:
            raise RuntimeError("process died here")

    crashing = make_ingestor(store, arxiv, http, clock, page_size=10, on_stored=crash_on_second_page)
    with pytest.raises(RuntimeError):
        await crashing.poll_once()
    assert await store.papers.count() == 10
    assert (await store.sources.get(crashing.source)).watermark is None

    seen: list[str] = []

    async def record(result: UpsertResult, papers: Sequence[Paper]) -> None:
        seen.extend(result.new)

    report = await make_ingestor(store, arxiv, http, clock, page_size=10, on_stored=record).poll_once()
    assert report.complete and await store.papers.count() == 25
    assert len(seen) == 15 and len(set(seen)) == 15  # each missing paper handed on exactly once


async def test_requests_respect_min_interval(store: Store, arxiv: FakeArxiv, http, clock: FakeClock) -> None:
    arxiv.papers = corpus(clock, 25)
    await make_ingestor(store, arxiv, http, clock, page_size=10).poll_once()
    assert clock.sleeps and all(s >= 3.0 - 1e-9 for s in clock.sleeps)
    assert len(clock.sleeps) == 2  # three requests, two waits


async def test_first_cycle_is_history_and_later_cycles_are_new(
    store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    history: list[str] = []
    new: list[str] = []

    async def as_history(result: UpsertResult, papers: Sequence[Paper]) -> None:
        history.extend(result.new)

    async def as_new(result: UpsertResult, papers: Sequence[Paper]) -> None:
        new.extend(result.new)

    ingestor = make_ingestor(store, arxiv, http, clock, on_stored=as_new, on_history=as_history)
    arxiv.fail_next(503, count=3)
    assert not (await ingestor.poll_once()).complete  # a failed first cycle is still the first
    arxiv.papers = corpus(clock, 4)
    await ingestor.poll_once()
    assert len(history) == 4 and new == []
    clock.advance(3600)
    arxiv.papers.append(make_paper(77, published=clock.now() - timedelta(minutes=3)))
    await ingestor.poll_once()
    assert new == [make_paper(77).arxiv_id] and len(history) == 4


async def test_an_empty_first_cycle_still_ends_the_first_cycle(
    store: Store, arxiv: FakeArxiv, http, clock: FakeClock
) -> None:
    report = await make_ingestor(store, arxiv, http, clock).poll_once()
    assert report.complete and report.watermark is not None
    assert (await store.sources.get(report.source)).watermark is not None

"""One poll cycle against a loopback arXiv: paging, the stop condition, the overlap window, new versions,
faults survived with nothing half-stored and nothing lost, and hostile entries that cannot stop polling."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bot.clock import FakeClock
from bot.ingest import Ingestor
from bot.intake import ExtraWrites, Intake, IntakeReport
from bot.loopback.arxiv import LoopbackArxiv, RecordedRequest
from bot.loopback.atom import RawEntry, entry_xml
from bot.models import Author, Paper
from bot.sources.api_source import ArxivApiSource
from bot.sources.arxiv_api import ArxivClient
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.store import Store
from bot.topics.index import TopicIndex
from tests.factories import make_paper
from tests.fakes.hostile import HOSTILE_ENTRIES, HOSTILE_ID, hostile_entry
from tests.services.world import services_world

CATS = ("cs.AI", "cs.LG")


def corpus(clock: FakeClock, count: int, *, start: int = 0, hours_apart: float = 0.05) -> list[Paper]:
    """Papers submitted over the last hours before the clock's now, newest first."""
    now = clock.now()
    return [
        make_paper(start + i, published=now - timedelta(hours=hours_apart * (i + 1))) for i in range(count)
    ]


@pytest.fixture
async def arxiv() -> AsyncIterator[LoopbackArxiv]:
    async with LoopbackArxiv() as fake:
        yield fake


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    client = build_http_client("paperwatch-tests/0.1", timeout=5.0)
    yield client
    await client.aclose()


def make_ingestor(
    store: Store,
    arxiv: LoopbackArxiv,
    http: httpx.AsyncClient,
    clock: FakeClock,
    intake: Intake | None = None,
    **options: object,
) -> Ingestor:
    polite = PoliteHttp(http, clock, min_interval=3.0, max_tries=3)
    intake = intake or Intake(store, TopicIndex(store, clock), clock)
    source = ArxivApiSource(ArxivClient(polite, arxiv.url), CATS, **options)  # type: ignore[arg-type]
    return Ingestor(store, source, clock, intake=intake)


@asynccontextmanager
async def following_rl(store: Store, clock: FakeClock) -> AsyncIterator[tuple[Intake, int]]:
    """The intake, with a topic every corpus paper matches, followed by a channel of server 1."""
    async with services_world(store, clock) as world:
        topic, _ = await world.services.topics.save_custom(1, "RL", "ti:reinforcement")
        follows = world.services.follows
        await follows.follow(await follows.plan(1, 10, "RL"))
        yield world.intake, topic.id


class CrashingIntake(Intake):
    """A process that dies inside the transaction of its second page, after the page's writes."""

    pages = 0

    async def store_papers(
        self, papers: Sequence[Paper], *, announce: bool, also: ExtraWrites | None = None
    ) -> IntakeReport:
        self.pages += 1

        async def then_die() -> None:
            if also is not None:
                await also()
            if self.pages == 2:
                raise RuntimeError("process died here")

        return await super().store_papers(papers, announce=announce, also=then_die)


def api_requests(arxiv: LoopbackArxiv) -> list[dict[str, str]]:
    return [r.params for r in arxiv.requests if r.endpoint == "api"]


async def test_pages_until_the_range_is_walked(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
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
    async with LoopbackArxiv(everything) as arxiv:
        arxiv.ignore_date_range = True
        ingestor = make_ingestor(store, arxiv, http, clock, page_size=5, overlap=timedelta(hours=36))
        first = await ingestor.poll_once()
        # Page one holds the papers of the range asked for (and older ones, skipped); page two only older
        # ones: the walk ends there, and nothing far outside the range is stored.
        assert first.complete and first.pages == 2 and first.fetched == 2 and first.skipped == 8
        assert await store.papers.count() == 2
        arxiv.requests.clear()
        clock.advance(3600)
        arxiv.papers.insert(0, make_paper(99, published=clock.now() - timedelta(minutes=5)))
        second = await ingestor.poll_once()
        # The new paper, and one 72 h old that the first range (36 h back from now) left out and this one
        # (36 h back from the watermark, a day ago) holds.
        assert second.complete and second.new == [make_paper(99).arxiv_id, everything[2].arxiv_id]
        # page one holds the new paper; page two only known papers older than the overlap: the walk ends there
        assert [int(r["start"]) for r in api_requests(arxiv)] == [0, 5]


async def test_overlap_catches_late_announcements(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
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
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
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
    fault: str, store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
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
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    arxiv.fail_next(400)
    report = await make_ingestor(store, arxiv, http, clock).poll_once()
    assert not report.complete and "cat:cs.AI" in (report.error or "")
    assert len(api_requests(arxiv)) == 1  # a rejected query is not retried


async def test_crash_between_fetch_and_commit_then_catch_up(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 25)
    async with following_rl(store, clock) as (intake, topic_id):
        crashing = CrashingIntake(store, intake.index, clock)
        failed = await make_ingestor(store, arxiv, http, clock, crashing, page_size=10).poll_once()
        # recorded and reported, not raised: polling goes on
        assert (
            not failed.complete and failed.error == "internal error (RuntimeError); the log has the details"
        )
        assert await store.papers.count() == 10  # the second page's papers and matches were rolled back
        assert len(await store.topics.latest_papers(topic_id, 50)) == 10
        state = await store.sources.get(failed.source)
        assert (
            state.watermark is None and state.last_error == failed.error and state.consecutive_failures == 1
        )

        report = await make_ingestor(store, arxiv, http, clock, intake, page_size=10).poll_once()
        assert report.complete and await store.papers.count() == 25
        assert len(report.new) == 15 and len(set(report.new)) == 15  # each missing paper stored exactly once
        assert len(await store.topics.latest_papers(topic_id, 50)) == 25  # and matched


async def test_requests_respect_min_interval(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 25)
    await make_ingestor(store, arxiv, http, clock, page_size=10).poll_once()
    assert clock.sleeps and all(s >= 3.0 - 1e-9 for s in clock.sleeps)
    assert len(clock.sleeps) == 2  # three requests, two waits


async def test_first_cycle_is_history_and_later_cycles_are_new(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    async with following_rl(store, clock) as (intake, topic_id):
        ingestor = make_ingestor(store, arxiv, http, clock, intake)
        arxiv.fail_next(503, count=3)
        assert not (await ingestor.poll_once()).complete  # a failed first cycle is still the first
        arxiv.papers = corpus(clock, 4)
        first = await ingestor.poll_once()
        # history: stored and matched, never posted
        assert len(first.new) == 4 and len(await store.topics.latest_papers(topic_id, 50)) == 4
        assert await store.deliveries.counts(1) == {}
        clock.advance(3600)
        arxiv.papers.append(make_paper(77, published=clock.now() - timedelta(minutes=3)))
        second = await ingestor.poll_once()
        assert second.new == [make_paper(77).arxiv_id]
        assert await store.deliveries.counts(1) == {"pending": 1}  # only the paper announced after the first


async def test_an_empty_first_cycle_still_ends_the_first_cycle(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    report = await make_ingestor(store, arxiv, http, clock).poll_once()
    assert report.complete and report.watermark is not None
    assert (await store.sources.get(report.source)).watermark is not None


# -- hostile data: nothing a page holds stops polling --------------------------------------------------------


def skip_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "bot.ingest" and "skipped entry" in r.getMessage()
    ]


async def test_an_entry_dated_2099_neither_moves_the_watermark_nor_stops_polling(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    good = corpus(clock, 6)
    future = make_paper(90, published=datetime(2099, 1, 1, tzinfo=UTC))
    arxiv.papers = [*good, RawEntry(entry_xml(future))]  # served whatever range is asked for
    ingestor = make_ingestor(store, arxiv, http, clock)
    with caplog.at_level(logging.WARNING, logger="bot.ingest"):
        first = await ingestor.poll_once()
        assert first.complete and first.skipped == 1
        assert sorted(first.new) == sorted(p.arxiv_id for p in good)
        assert await store.papers.get(future.arxiv_id) is None
        state = await store.sources.get(ingestor.source)
        assert state.watermark is not None and state.watermark <= clock.now()
        assert state.skipped and state.skipped.entries == 1
        assert state.skipped.latest.entry_id == future.versioned_id
        assert "outside the window" in state.skipped.latest.reason

        clock.advance(1800)
        late = make_paper(91, published=clock.now() - timedelta(minutes=2))
        arxiv.papers.append(late)
        second = await ingestor.poll_once()
    assert second.complete and second.new == [late.arxiv_id] and second.skipped == 1
    state = await store.sources.get(ingestor.source)
    assert state.skipped and state.skipped.entries == 1 and state.consecutive_failures == 0
    [warning] = skip_warnings(caplog)  # seen at both polls, logged once
    assert future.versioned_id in warning


async def test_a_watermark_left_in_the_future_by_an_earlier_version_heals(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 3)
    ingestor = make_ingestor(store, arxiv, http, clock)
    assert (await ingestor.poll_once()).complete
    await store.db.execute(  # what an entry dated 2099 left behind before the watermark was capped
        "UPDATE source_state SET watermark = ? WHERE source = ?",
        (int(datetime(2099, 1, 1, tzinfo=UTC).timestamp()), ingestor.source),
    )
    clock.advance(1800)
    late = make_paper(50, published=clock.now() - timedelta(minutes=2))
    arxiv.papers.append(late)
    report = await ingestor.poll_once()
    assert report.complete and report.new == [late.arxiv_id]
    state = await store.sources.get(ingestor.source)
    assert state.watermark is not None and state.watermark <= clock.now()


@pytest.mark.parametrize("case", list(HOSTILE_ENTRIES))
async def test_one_hostile_entry_is_skipped_counted_logged_once_and_the_rest_stored(
    case: str, store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    good = corpus(clock, 12)
    # Filed between the 6th and 7th newest papers: on the second of three pages.
    arxiv.papers = [*good, hostile_entry(case, published=good[5].published - timedelta(seconds=30))]
    ingestor = make_ingestor(store, arxiv, http, clock, page_size=5)
    with caplog.at_level(logging.WARNING, logger="bot.ingest"):
        report = await ingestor.poll_once()
        assert report.complete and report.pages == 3 and report.skipped == 1
        assert sorted(report.new) == sorted(p.arxiv_id for p in good)
        assert await store.papers.count() == 12
        state = await store.sources.get(ingestor.source)
        assert state.skipped and state.skipped.entries == 1 and state.last_error is None

        clock.advance(1800)
        late = make_paper(500, published=clock.now() - timedelta(minutes=2))
        arxiv.papers.append(late)
        again = await ingestor.poll_once()
    assert again.complete and again.new == [late.arxiv_id] and again.skipped == 1
    assert (state := await store.sources.get(ingestor.source)).skipped and state.skipped.entries == 1
    [warning] = skip_warnings(caplog)
    if case not in ("no id", "an id that is no arXiv id"):
        assert HOSTILE_ID in warning


async def test_a_page_of_nothing_but_unusable_entries_does_not_end_the_walk(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    good = corpus(clock, 10)
    middle = good[4].published - timedelta(seconds=30)
    bad = [hostile_entry(case, published=middle) for case in list(HOSTILE_ENTRIES)[:5]]
    arxiv.papers = [*good, *bad]
    report = await make_ingestor(store, arxiv, http, clock, page_size=5).poll_once()
    assert report.complete and report.pages == 3 and report.skipped == 5
    assert await store.papers.count() == 10


async def test_an_oversized_entry_is_stored_bounded(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    authors = (Author("N" * 50_000, ("A" * 50_000,) * 50), *(Author(f"Member {i}") for i in range(1, 5_000)))
    huge = make_paper(1, published=clock.now() - timedelta(hours=1), title="T" * 100_000, authors=authors)
    arxiv.papers = [huge, *corpus(clock, 3, start=10)]
    report = await make_ingestor(store, arxiv, http, clock).poll_once()
    assert report.complete and len(report.new) == 4
    stored = await store.papers.get(huge.arxiv_id)
    assert stored is not None and len(stored.title) <= 1_000
    assert len(stored.authors) == 500 and stored.authors_omitted == 4_500
    assert len(stored.authors[0].name) <= 300 and len(stored.authors[0].affiliations) <= 10
    assert stored.authors[-1].name == "Member 499"


# -- failures of the HTTP layer are recorded, and the next cycle retries -------------------------------------

HTTP_FAULTS = {
    "redirect loop": (lambda a: a.redirect_next(count=500), "redirect loop"),
    "redirect to port 99999": (
        lambda a: a.serve_raw_next(
            b"", status=302, headers={"Location": "http://127.0.0.1:99999/"}, count=500
        ),
        "port must be 0-65535",
    ),
}


@pytest.mark.parametrize("fault", list(HTTP_FAULTS))
async def test_an_error_of_the_http_layer_fails_the_cycle_not_the_poller(
    fault: str, store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 25)
    ingestor = make_ingestor(store, arxiv, http, clock, page_size=10)
    queue, said = HTTP_FAULTS[fault]

    def fault_after_first_page(request: RecordedRequest) -> None:
        if len(arxiv.requests) == 2:  # page two's request, and every one after it
            queue(arxiv)

    arxiv.on_request = fault_after_first_page
    report = await ingestor.poll_once()
    assert not report.complete and said in (report.error or "")
    assert await store.papers.count() == 10
    state = await store.sources.get(ingestor.source)
    assert state.consecutive_failures == 1 and said in (state.last_error or "")

    arxiv.on_request = None
    arxiv.clear_faults()
    recovered = await ingestor.poll_once()
    assert recovered.complete and await store.papers.count() == 25


async def test_a_trickling_page_fails_the_cycle_at_the_deadline_and_the_next_catches_up(
    store: Store, arxiv: LoopbackArxiv, http, clock: FakeClock
) -> None:
    arxiv.papers = corpus(clock, 25)
    polite = PoliteHttp(http, clock, min_interval=3.0, max_tries=2, deadline=0.5)
    intake = Intake(store, TopicIndex(store, clock), clock)
    ingestor = Ingestor(
        store, ArxivApiSource(ArxivClient(polite, arxiv.url), CATS, page_size=10), clock, intake=intake
    )

    def trickle_after_first_page(request: RecordedRequest) -> None:
        if len(arxiv.requests) == 2:  # both tries of page two
            arxiv.trickle_next(count=2, interval=0.05)

    arxiv.on_request = trickle_after_first_page
    async with asyncio.timeout(60):  # a bound on a hang, not a measurement
        report = await ingestor.poll_once()
    assert not report.complete and "deadline" in (report.error or "")
    assert await store.papers.count() == 10
    assert "deadline" in ((await store.sources.get(ingestor.source)).last_error or "")
    arxiv.on_request = None
    assert (await ingestor.poll_once()).complete and await store.papers.count() == 25

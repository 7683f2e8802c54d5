"""ArxivClient against LoopbackArxiv over real loopback HTTP (httpx), with a FakeClock: waits are recorded, not slept.

Only the timeout test spends real time (0.5 s): a network timeout cannot be faked by the clock.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import httpx
import pytest

from bot.clock import FakeClock
from bot.errors import ArxivQueryError, ArxivUnavailable, MalformedFeed
from bot.loopback.arxiv import LoopbackArxiv
from bot.models import Author, Paper
from bot.sources.arxiv_api import ArxivClient, UnsafeFeed, category_query, submitted_range
from bot.sources.polite_http import PoliteHttp, build_http_client
from tests.factories import make_paper
from tests.shared_files import FIXTURES

UA = "paperwatch-test/0.1 (Discord research-alert bot; mailto:tests@example.org)"

BASE = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)


def paper(arxiv_id: str, published: datetime, *cats: str, version: int = 1) -> Paper:
    return make_paper(
        arxiv_id=arxiv_id,
        version=version,
        title=f"Paper {arxiv_id}",
        abstract=f"Abstract of {arxiv_id}.",
        authors=(Author("Ada Lovelace", ("Analytical Engines Ltd",)), Author("Alan Turing")),
        primary_category=cats[0],
        categories=cats,
        published=published,
        updated=published + timedelta(days=version - 1),
    )


# A small corpus whose query answers are written out by hand below.
SMALL = [
    paper("2611.00001", datetime(2026, 11, 1, 9, 0, tzinfo=UTC), "cs.AI"),
    paper("2611.00002", datetime(2026, 11, 1, 23, 59, 30, tzinfo=UTC), "cs.LG", "cs.AI"),
    paper("2611.00003", datetime(2026, 11, 2, 0, 0, tzinfo=UTC), "cs.AI"),
    paper("2611.00004", datetime(2026, 11, 1, 12, 0, tzinfo=UTC), "cs.CL"),
    paper("2610.09999", datetime(2026, 10, 31, 23, 59, tzinfo=UTC), "stat.ML", "cs.LG"),
]
# A larger corpus for paging and id chunking: 160 papers, 7 hours apart, cycling categories.
_CYCLE = [("cs.AI",), ("cs.LG", "cs.AI"), ("cs.CL",), ("stat.ML", "cs.LG")]
LARGE = [paper(f"2611.{i + 100:05d}", BASE + timedelta(hours=7 * i), *_CYCLE[i % 4]) for i in range(160)]


@asynccontextmanager
async def arxiv_client(
    fa: LoopbackArxiv,
    clock: FakeClock,
    *,
    timeout: float = 5.0,  # noqa: ASYNC109 - httpx's timeout, handed to build_http_client
    max_tries: int = 4,
    min_interval: float = 3.0,
    backoff_base: float = 3.0,
) -> AsyncIterator[ArxivClient]:
    async with build_http_client(UA, timeout=timeout) as client:
        http = PoliteHttp(
            client,
            clock,
            min_interval=min_interval,
            max_tries=max_tries,
            backoff_base=backoff_base,
            rng=random.Random(20261120),
        )
        yield ArxivClient(http, fa.url)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def fa() -> AsyncIterator[LoopbackArxiv]:
    async with LoopbackArxiv(SMALL + LARGE) as fake:
        yield fake


@pytest.fixture
async def client(fa: LoopbackArxiv, clock: FakeClock) -> AsyncIterator[ArxivClient]:
    async with arxiv_client(fa, clock) as arxiv:
        yield arxiv


def ids(page_papers: list[Paper]) -> list[str]:
    return [p.arxiv_id for p in page_papers]


# -- query builders -----------------------------------------------------------------------------------


def test_category_query_shapes() -> None:
    assert category_query(["cs.AI"]) == "cat:cs.AI"
    assert category_query(["cs.AI", "cs.LG", "cs.AI"]) == "(cat:cs.AI OR cat:cs.LG)"
    with pytest.raises(ValueError):
        category_query([])
    with pytest.raises(ValueError):
        category_query(["cs.AI) OR (all:x"])


def test_submitted_range_is_gmt_minutes() -> None:
    eastern = datetime(2026, 11, 1, 15, 30, tzinfo=UTC).astimezone(ZoneInfo("America/New_York"))
    assert submitted_range(eastern, datetime(2026, 11, 1, 23, 59, 59, tzinfo=UTC)) == (
        "submittedDate:[202611011530 TO 202611012359]"
    )
    with pytest.raises(ValueError):
        submitted_range(datetime(2026, 11, 2), datetime(2026, 11, 3))  # naive
    with pytest.raises(ValueError):
        submitted_range(BASE + timedelta(days=1), BASE)


# -- queries the fake answers -------------------------------------------------------------------------


async def test_categories_and_inclusive_date_range() -> None:
    async with LoopbackArxiv(SMALL) as small, arxiv_client(small, FakeClock()) as client:
        window = submitted_range(
            datetime(2026, 11, 1, 0, 0, tzinfo=UTC), datetime(2026, 11, 1, 23, 59, tzinfo=UTC)
        )
        page = await client.search(f"{category_query(['cs.AI', 'cs.LG'])} AND {window}")
        # 00002 at 23:59:30 is inside the last minute; 00003 at 00:00 next day and 09999 before are not.
        assert ids(page.papers) == ["2611.00002", "2611.00001"]
        assert page.total_results == 2
        oldest_first = await client.search("cat:cs.LG", sort_order="ascending")
        assert ids(oldest_first.papers) == ["2610.09999", "2611.00002"]
        sent = small.requests[0].params
        assert sent["search_query"] == (
            "(cat:cs.AI OR cat:cs.LG) AND submittedDate:[202611010000 TO 202611012359]"
        )
        assert (sent["sortBy"], sent["sortOrder"], sent["start"], sent["max_results"]) == (
            "submittedDate",
            "descending",
            "0",
            "100",
        )


async def test_paging_and_a_corpus_that_grows(fa: LoopbackArxiv, client: ArxivClient) -> None:
    first = await client.search("cat:cs.CL", start=0, max_results=10)
    second = await client.search("cat:cs.CL", start=10, max_results=10)
    assert first.total_results == 41  # 40 of LARGE + 1 of SMALL
    assert (second.start_index, second.items_per_page) == (10, 10)
    assert len(first.papers) == len(second.papers) == 10
    assert not set(ids(first.papers)) & set(ids(second.papers))
    dates = [p.published for p in first.papers + second.papers]
    assert dates == sorted(dates, reverse=True)
    fa.papers.append(paper("2612.00001", datetime(2027, 1, 1, tzinfo=UTC), "cs.CL"))
    newest = await client.search("cat:cs.CL", max_results=1)
    assert ids(newest.papers) == ["2612.00001"]
    assert newest.total_results == 42


async def test_max_results_is_capped_at_2000(fa: LoopbackArxiv, client: ArxivClient) -> None:
    page = await client.search("cat:cs.AI", max_results=5000)
    assert fa.requests[0].params["max_results"] == "2000"
    assert len(page.papers) == page.total_results == 83  # 80 of LARGE + 3 of SMALL


async def test_user_agent_sent(fa: LoopbackArxiv, client: ArxivClient) -> None:
    await client.search("cat:cs.AI", max_results=1)
    assert fa.requests[0].headers["User-Agent"] == UA


async def test_min_interval_between_requests(
    fa: LoopbackArxiv, client: ArxivClient, clock: FakeClock
) -> None:
    await client.search("cat:cs.AI", max_results=1)
    assert clock.sleeps == []  # the first request does not wait
    await client.search("cat:cs.AI", max_results=1)
    assert clock.sleeps == [3.0]
    clock.advance(1.25)  # time spent elsewhere counts towards the interval
    await client.search("cat:cs.AI", max_results=1)
    assert clock.sleeps == [3.0, 1.75]
    assert len(fa.requests) == 3


async def test_recorded_fixture_served_as_is(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.serve_raw_next((FIXTURES / "api_query_testing_100.xml").read_bytes())
    page = await client.search("all:testing")
    assert (len(page.papers), page.total_results) == (100, 214881)


# -- faults: retried ----------------------------------------------------------------------------------


async def test_503_then_success(fa: LoopbackArxiv, client: ArxivClient, clock: FakeClock) -> None:
    fa.fail_next(503)
    page = await client.search("cat:cs.CL", max_results=5)
    assert len(page.papers) == 5
    assert len(fa.requests) == 2
    assert clock.sleeps == [3.0]  # backoff of the first retry is never below the 3 s interval


async def test_backoff_grows_exponentially(fa: LoopbackArxiv, clock: FakeClock) -> None:
    fa.fail_next(503, count=3)
    async with arxiv_client(fa, clock, min_interval=1.0, backoff_base=2.0, max_tries=4) as client:
        await client.search("cat:cs.CL", max_results=1)
    assert len(clock.sleeps) == 3
    # Full jitter within [ceiling/2, ceiling], ceiling = 2 * 2**attempt: ranges [1,2], [2,4], [4,8].
    for attempt, wait in enumerate(clock.sleeps):
        ceiling = 2.0 * 2**attempt
        assert ceiling / 2 <= wait <= ceiling
    assert clock.sleeps == sorted(clock.sleeps)


async def test_429_with_retry_after_is_honoured(
    fa: LoopbackArxiv, client: ArxivClient, clock: FakeClock
) -> None:
    fa.fail_next(429, retry_after="7")
    await client.search("cat:cs.AI", max_results=1)
    assert clock.sleeps == [7.0]
    assert len(fa.requests) == 2


async def test_429_with_http_date_retry_after(
    fa: LoopbackArxiv, client: ArxivClient, clock: FakeClock
) -> None:
    fa.fail_next(
        429, retry_after=email.utils.format_datetime(clock.now() + timedelta(seconds=42), usegmt=True)
    )
    await client.search("cat:cs.AI", max_results=1)
    assert clock.sleeps == [42.0]


async def test_429_without_retry_after_backs_off(
    fa: LoopbackArxiv, client: ArxivClient, clock: FakeClock
) -> None:
    fa.fail_next(429, count=2)
    await client.search("cat:cs.AI", max_results=1)
    assert len(fa.requests) == 3
    assert clock.sleeps[0] == 3.0
    assert 3.0 <= clock.sleeps[1] <= 6.0


async def test_timeout_then_success(fa: LoopbackArxiv, clock: FakeClock) -> None:
    fa.delay_next(2.0)
    async with arxiv_client(fa, clock, timeout=0.5) as client:
        page = await client.search("cat:cs.AI", max_results=2)
    assert len(page.papers) == 2
    assert len(fa.requests) == 2
    assert clock.sleeps == [3.0]


async def test_reset_connection_then_success(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.reset_next()
    page = await client.search("cat:cs.AI", max_results=50)
    assert len(page.papers) == 50
    assert len(fa.requests) == 2


async def test_truncated_xml_then_success(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.truncate_next()
    page = await client.search("cat:cs.AI", max_results=50)
    assert len(page.papers) == 50
    assert len(fa.requests) == 2


async def test_html_page_with_200_is_retried(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.serve_raw_next(b"<html><body><h1>Service temporarily unavailable</h1></body></html>")
    page = await client.search("cat:cs.AI", max_results=1)
    assert len(page.papers) == 1
    assert len(fa.requests) == 2


async def test_empty_page_with_more_results_is_retried(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.empty_next(2)
    page = await client.search("cat:cs.AI", max_results=3)
    assert len(page.papers) == 3
    assert len(fa.requests) == 3


async def test_empty_page_every_time_is_unavailable_not_empty(fa: LoopbackArxiv, clock: FakeClock) -> None:
    fa.empty_next(10)
    async with arxiv_client(fa, clock, max_tries=3) as client:
        with pytest.raises(ArxivUnavailable, match="empty page"):
            await client.search("cat:cs.AI")
    assert len(fa.requests) == 3
    assert len(clock.sleeps) == 2


async def test_empty_page_past_the_end_is_a_real_empty_page(fa: LoopbackArxiv, client: ArxivClient) -> None:
    page = await client.search("cat:cs.AI", start=500)
    assert (page.papers, page.total_results) == ([], 83)
    assert len(fa.requests) == 1


async def test_503_every_time_is_unavailable(fa: LoopbackArxiv, clock: FakeClock) -> None:
    fa.fail_next(503, count=5)
    async with arxiv_client(fa, clock, max_tries=3) as client:
        with pytest.raises(ArxivUnavailable, match="HTTP 503"):
            await client.search("cat:cs.AI")
    assert len(fa.requests) == 3
    assert fa.pending_faults() == 2


# -- faults: not retried ------------------------------------------------------------------------------


async def test_400_error_entry_names_the_query_and_is_not_retried(
    fa: LoopbackArxiv, client: ArxivClient, clock: FakeClock
) -> None:
    query = 'ti:"graph neural" ANDNOT cat:cs.AI'  # a shape the fake (like arXiv for bad input) rejects
    with pytest.raises(ArxivQueryError) as info:
        await client.search(query)
    assert query in str(info.value)
    assert "unsupported query" in info.value.detail
    assert len(fa.requests) == 1
    assert clock.sleeps == []


async def test_injected_400_is_a_query_error(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.fail_next(400)
    with pytest.raises(ArxivQueryError, match="malformed query"):
        await client.search("cat:cs.AI")
    assert len(fa.requests) == 1


async def test_unsafe_document_is_not_retried(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.serve_raw_next(
        b'<?xml version="1.0"?>\n<!DOCTYPE feed [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
        b'<feed xmlns="http://www.w3.org/2005/Atom"><title>&xxe;</title></feed>',
        count=3,
    )
    with pytest.raises(MalformedFeed) as info:
        await client.search("cat:cs.AI")
    assert isinstance(info.value, UnsafeFeed)
    assert len(fa.requests) == 1


async def test_403_is_unavailable_without_retries(fa: LoopbackArxiv, client: ArxivClient) -> None:
    fa.fail_next(403)
    with pytest.raises(ArxivUnavailable, match="403"):
        await client.search("cat:cs.AI")
    assert len(fa.requests) == 1


# -- fetch_ids ----------------------------------------------------------------------------------------


async def test_fetch_ids_in_chunks_of_100(fa: LoopbackArxiv, client: ArxivClient) -> None:
    wanted = [p.arxiv_id for p in LARGE[:150]]
    wanted[0] = f"https://arxiv.org/abs/{wanted[0]}v1"  # URLs and versions are accepted
    papers = await client.fetch_ids([*wanted, "2611.00100"])  # a duplicate is asked once
    assert [p.arxiv_id for p in papers] == [p.arxiv_id for p in LARGE[:150]]
    assert papers[0] == LARGE[0]
    assert [len(r.params["id_list"].split(",")) for r in fa.requests] == [100, 50]
    assert fa.requests[0].params["id_list"].startswith("2611.00100v1,2611.00101,")
    assert "search_query" not in fa.requests[0].params


async def test_fetch_ids_unknown_id_is_simply_absent(fa: LoopbackArxiv, client: ArxivClient) -> None:
    assert await client.fetch_ids(["2611.00001", "2101.99999"]) == [SMALL[0]]
    assert await client.fetch_ids([]) == []
    assert len(fa.requests) == 1


async def test_fetch_ids_rejects_non_ids_before_any_request(fa: LoopbackArxiv, client: ArxivClient) -> None:
    with pytest.raises(ArxivQueryError, match="not an arXiv id"):
        await client.fetch_ids(["2611.00001", "hello world"])
    assert fa.requests == []


# -- the fake itself: waiting, RSS ---------------------------------------------------------------------


async def test_wait_for_requests_is_event_driven(fa: LoopbackArxiv, client: ArxivClient) -> None:
    task = asyncio.create_task(client.search("cat:cs.AI", max_results=1))
    seen = await fa.wait_for_requests(1, timeout=10, endpoint="api")
    assert seen[0].params["search_query"] == "cat:cs.AI"
    await task
    with pytest.raises(TimeoutError, match="1 of 2"):
        await fa.wait_for_requests(2, timeout=0.05)


async def test_rss_conditional_get(fa: LoopbackArxiv) -> None:
    modified = datetime(2026, 11, 20, 5, 0, tzinfo=UTC)
    fa.set_rss(b"<rss>today</rss>", cats="cs.AI+cs.LG", last_modified=modified)
    url = f"{fa.rss_url}/cs.AI+cs.LG"
    async with httpx.AsyncClient() as http:
        first = await http.get(url)
        assert (first.status_code, first.content) == (200, b"<rss>today</rss>")
        etag = first.headers["ETag"]
        assert first.headers["Last-Modified"] == "Fri, 20 Nov 2026 05:00:00 GMT"
        assert (await http.get(url, headers={"If-None-Match": etag})).status_code == 304
        assert (await http.get(url, headers={"If-None-Match": '"other"'})).status_code == 200
        since = first.headers["Last-Modified"]
        assert (await http.get(url, headers={"If-Modified-Since": since})).status_code == 304
        earlier = email.utils.format_datetime(modified - timedelta(hours=1), usegmt=True)
        assert (await http.get(url, headers={"If-Modified-Since": earlier})).status_code == 200
        fa.set_rss(b"<rss>tomorrow</rss>", cats="cs.AI+cs.LG")
        changed = await http.get(url, headers={"If-None-Match": etag})
        assert (changed.status_code, changed.content) == (200, b"<rss>tomorrow</rss>")
        assert (await http.get(f"{fa.rss_url}/math.GT")).status_code == 404
        fa.fail_next(503, endpoint="rss")
        assert (await http.get(url)).status_code == 503
    assert [r.endpoint for r in fa.requests] == ["rss"] * 8
    assert fa.pending_faults("api") == 0

"""arXiv's RSS feed as a Source: the recorded quant-ph feed read over 127.0.0.1 into papers, updates and
per-category announcements, one conditional request per cycle for all categories."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime

import pytest

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv, rss_feed
from bot.models import Announcement, SourceState
from bot.sources.base import Batch, Source
from bot.sources.feeds import FeedReader, parse_arxiv_feed
from bot.sources.polite_http import PoliteHttp, build_http_client
from bot.sources.rss_source import ArxivRssSource, announcements_of, watched
from tests.factories import make_paper
from tests.shared_files import FIXTURES

FIXTURE = (FIXTURES / "rss_quant-ph_2025-04-28.xml").read_bytes()
DAY = date(2025, 4, 28)
AFTER = datetime(2025, 4, 28, 12, 0, tzinfo=UTC)  # the feed's day, after its pubDate (04:00 UTC)


@pytest.fixture
async def fake() -> AsyncIterator[LoopbackArxiv]:
    async with LoopbackArxiv() as fa:
        yield fa


@pytest.fixture
async def http(clock: FakeClock) -> AsyncIterator[PoliteHttp]:
    client = build_http_client("paperwatch-tests/0.1 (mailto:tests@example.org)", timeout=10.0)
    try:
        yield PoliteHttp(client, clock, max_tries=2)
    finally:
        await client.aclose()


async def read_all(source: Source, state: SourceState, now: datetime = AFTER) -> list[Batch]:
    return [batch async for batch in source.read(state, now)]


async def test_the_recorded_feed_becomes_papers_updates_and_announcements(
    fake: LoopbackArxiv, http: PoliteHttp
) -> None:
    fake.set_rss(FIXTURE, cats="quant-ph", etag='"d1"')
    source = ArxivRssSource(FeedReader(http), fake.rss_url, ["quant-ph"])
    [batch] = await read_all(source, SourceState(source.key))
    assert source.key == "arxiv-rss:quant-ph"
    # new and cross items are papers announced for the first time; replacements are new versions
    assert (len(batch.papers), len(batch.updates), batch.skipped) == (50, 31, [])
    assert batch.announce and batch.validators is not None and batch.validators.etag == '"d1"'
    assert all(p.provisional and p.published == datetime(2025, 4, 28, 4, tzinfo=UTC) for p in batch.papers)
    assert Counter(a.kind for a in batch.announcements) == {
        "new": 40,
        "cross": 10,
        "replace": 22,
        "replace-cross": 9,
    }
    assert {a.category for a in batch.announcements} == {"quant-ph"}
    assert {a.day for a in batch.announcements} == {DAY}
    cross = next(a for a in batch.announcements if a.arxiv_id == "2504.16299")
    assert cross == Announcement("2504.16299", 1, "quant-ph", "cross", DAY)


async def test_one_request_for_every_category_and_a_304_brings_nothing(
    fake: LoopbackArxiv, http: PoliteHttp
) -> None:
    fake.set_rss(FIXTURE, cats="quant-ph+cs.LG", etag='"d1"')
    source = ArxivRssSource(FeedReader(http), fake.rss_url, ["quant-ph", "cs.LG"])
    [first] = await read_all(source, SourceState(source.key))
    validators = first.validators
    assert validators is not None
    # A paper primary in cs.LG and cross-listed to quant-ph is announced in both watched categories.
    both = sorted(a.category for a in first.announcements if a.arxiv_id == "2401.00867")
    assert both == ["cs.LG", "quant-ph"]
    state = SourceState(source.key, etag=validators.etag, last_modified=validators.last_modified)
    [again] = await read_all(source, state)
    assert not again.served and not again.announcements and again.validators == validators
    requests = await fake.wait_for_requests(2, endpoint="rss")
    assert [r.path for r in requests] == ["/rss/quant-ph+cs.LG"] * 2
    assert requests[1].headers.get("If-None-Match") == '"d1"'


async def test_items_of_unknown_type_or_unwatched_categories_are_skipped_and_named(
    fake: LoopbackArxiv, http: PoliteHttp
) -> None:
    robot = make_paper(2, categories=("cs.RO",), primary_category="cs.RO")
    fake.set_rss(
        rss_feed(
            [(make_paper(1), "new"), (make_paper(3), "withdrawn"), (robot, "new")],
            announced=AFTER,
        )
    )
    source = ArxivRssSource(FeedReader(http), fake.rss_url, ["cs.LG"])
    [batch] = await read_all(source, SourceState(source.key))
    assert [p.arxiv_id for p in batch.papers] == [make_paper(1).arxiv_id]
    assert [(s.entry_id, s.reason) for s in batch.skipped] == [
        (make_paper(3).versioned_id, "announce type 'unknown'"),
        (robot.versioned_id, "in none of the watched categories (cs.RO)"),
    ]


async def test_an_announcement_date_ahead_of_the_clock_is_held_at_now(
    fake: LoopbackArxiv, http: PoliteHttp
) -> None:
    fake.set_rss(rss_feed([(make_paper(1), "new")], announced=AFTER))
    source = ArxivRssSource(FeedReader(http), fake.rss_url, ["cs.LG"])
    early = datetime(2025, 4, 28, 1, 0, tzinfo=UTC)  # before the pubDate, 00:00 in New York (04:00 UTC)
    [batch] = await read_all(source, SourceState(source.key), early)
    assert batch.papers[0].published == batch.papers[0].updated == early
    assert batch.announcements[0].day == DAY  # the day stays the feed's


def test_kinds_per_category_follow_the_items_type() -> None:
    items = {i.paper.arxiv_id: i for i in parse_arxiv_feed(FIXTURE)}
    new = items["2504.17837"]  # new in quant-ph, also physics.comp-ph
    assert [(a.category, a.kind) for a in announcements_of(new, ["quant-ph", "physics"])] == [
        ("quant-ph", "new"),
        ("physics.comp-ph", "cross"),
    ]
    replaced = items["2112.14988"]  # replace, quant-ph primary, also cs.CR
    assert [(a.category, a.kind) for a in announcements_of(replaced, ["cs.CR", "quant-ph"])] == [
        ("quant-ph", "replace"),
        ("cs.CR", "replace-cross"),
    ]
    assert [a.version for a in announcements_of(replaced, ["quant-ph"])] == [4]
    assert (
        watched("math.GT", ["math"]) and not watched("mathx.GT", ["math"]) and not watched("cs.L", ["cs.LG"])
    )

"""The announcement cycle on the live schedule, built by the composition root against the loopback arXiv (API and
RSS) and a real SQLite file: a paper only the feed announces is posted once and completed from the API, a paper
both sources bring is posted once, replacements are never posted, and the feed's faults (5xx, a malformed
body, a stale category) lose nothing, duplicate nothing and never stop the API poll."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from bot.announcements import AnnouncementCycle
from bot.clock import FakeClock
from bot.config import Settings
from bot.context import AppContext, open_context
from bot.delivery import DeliveryWorker
from bot.loopback.arxiv import LoopbackArxiv, rss_feed
from bot.models import Announcement, Paper
from bot.scheduler import Scheduler
from tests.factories import make_paper
from tests.fakes.poster import RecordingPoster

NOW = datetime(2026, 11, 24, 21, 0, tzinfo=UTC)  # a Tuesday evening
TODAY = NOW.date()
CATS = ("cs.AI", "cs.LG")
CHANNEL = 10


@dataclass
class Lab:
    ctx: AppContext
    arxiv: LoopbackArxiv
    clock: FakeClock
    poster: RecordingPoster
    worker: DeliveryWorker

    @property
    def rss(self) -> AnnouncementCycle:
        cycle = self.ctx.announcements()
        assert cycle is not None
        return cycle

    def announce(self, *items: tuple[Paper, str], day: datetime = NOW, built: datetime | None = None) -> None:
        """The feed of the watched categories serves these items (the fake's ETag changes with the body)."""
        self.arxiv.set_rss(rss_feed(items, announced=day, built=built), cats="cs.AI+cs.LG")

    def posted(self) -> list[str]:
        return self.poster.cards(CHANNEL)

    def rss_requests(self) -> int:
        return sum(r.endpoint == "rss" for r in self.arxiv.requests)


@asynccontextmanager
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """A channel following every paper whose title says "reinforcement", the bot past its first poll."""
    clock = FakeClock(NOW)
    async with LoopbackArxiv() as arxiv:
        settings = Settings(
            _env_file=None,
            database_path=tmp_path / "paperwatch.sqlite3",
            arxiv_api_url=arxiv.url,
            arxiv_rss_url=arxiv.rss_url,
            arxiv_min_interval_seconds=0,
            arxiv_categories=CATS,
        )
        async with open_context(settings, clock) as ctx:
            assert (await ctx.ingestor().poll_once()).complete  # history: a fresh install's first poll
            follows = ctx.services.follows
            await follows.follow(await follows.plan(1, CHANNEL, "RL", query="ti:reinforcement"))
            poster = RecordingPoster()
            yield Lab(ctx, arxiv, clock, poster, ctx.delivery_worker(poster))


def submitted(n: int, days_ago: float, **fields: object) -> Paper:
    return make_paper(n, published=NOW - timedelta(days=days_ago), **fields)


async def test_a_paper_only_the_feed_announces_is_posted_once_with_its_submission_date(
    tmp_path: Path,
) -> None:
    async with lab(tmp_path) as w:
        late = submitted(1, days_ago=11)  # submitted long before its announcement: outside the poll's range
        w.arxiv.papers = [late]
        w.announce((late, "new"))
        assert (await w.ctx.ingestor().poll_once()).new == []  # the API's poll misses it
        report = await w.rss.run_once()
        assert report.complete and report.cycle.new == [late.arxiv_id] and report.completed == [late.arxiv_id]
        assert w.rss_requests() == 1
        id_lookups = [r.params["id_list"] for r in w.arxiv.requests if "id_list" in r.params]
        assert id_lookups == [late.arxiv_id]

        stored = await w.ctx.services.history.stored(late.arxiv_id)
        assert stored == late and not stored.provisional  # the API's copy completed the feed's
        assert stored.announced == Announcement(late.arxiv_id, 1, "cs.LG", "new", TODAY)
        assert (await w.worker.deliver_once()).sent == 1
        assert w.posted() == [late.arxiv_id]

        # Momentum counts it on its submission day, not on the day it was announced.
        papers = w.ctx._store.papers
        day = timedelta(days=1)
        v1_day = datetime(late.published.year, late.published.month, late.published.day, tzinfo=UTC)
        assert await papers.count_in_categories(["cs.LG"], v1_day, v1_day + day) == 1
        today = datetime(TODAY.year, TODAY.month, TODAY.day, tzinfo=UTC)
        assert await papers.count_in_categories(["cs.LG"], today, today + day) == 0

        # The next cycle: the feed is unchanged (a 304) and the poll brings nothing: nothing more is posted.
        w.clock.advance(1800)
        await w.ctx.ingestor().poll_once()
        again = await w.rss.run_once()
        assert again.complete and again.cycle.pages == 0 and "nothing announced since" in again.summary()
        assert [r.headers.get("If-None-Match") for r in w.arxiv.requests if r.endpoint == "rss"][1]
        assert (await w.worker.deliver_once()).sent == 0 and w.posted() == [late.arxiv_id]


@pytest.mark.parametrize("feed_first", [False, True], ids=["api-then-feed", "feed-then-api"])
async def test_a_paper_both_sources_bring_is_posted_once(tmp_path: Path, feed_first: bool) -> None:
    async with lab(tmp_path) as w:
        paper = submitted(2, days_ago=1)
        w.arxiv.papers = [paper]
        w.announce((paper, "new"))
        steps = [w.rss.run_once, w.ctx.ingestor().poll_once]
        for step in steps if feed_first else reversed(steps):
            await step()
            await w.worker.deliver_once()
        assert w.posted() == [paper.arxiv_id]
        assert await w.ctx._store.deliveries.counts(1) == {"sent": 1}
        assert await w.ctx.services.history.stored(paper.arxiv_id) == paper


async def test_replacements_update_papers_the_store_holds_and_are_never_posted(tmp_path: Path) -> None:
    async with lab(tmp_path) as w:
        known = submitted(3, days_ago=2)
        w.arxiv.papers = [known]
        await w.ctx.ingestor().poll_once()
        assert (await w.worker.deliver_once()).sent == 1
        revised = replace(known, version=2, title="Paper number 3 on reinforcement learning, revised")
        old = submitted(4, days_ago=400, version=3)  # replaced today, submitted long before the history
        w.arxiv.papers = [replace(revised, updated=NOW - timedelta(hours=30)), old]
        w.announce((revised, "replace"), (old, "replace-cross"))
        report = await w.rss.run_once()
        assert report.cycle.new == [] and report.cycle.updated == [known.arxiv_id]
        assert await w.ctx.services.history.stored(old.arxiv_id) is None  # outside the history: not stored
        stored = await w.ctx.services.history.stored(known.arxiv_id)
        assert stored is not None and stored.version == 2 and stored.title.endswith("revised")
        assert stored.published == known.published and not stored.provisional
        assert stored.announced is not None and stored.announced.kind == "replace"
        assert (await w.worker.deliver_once()).sent == 0 and w.posted() == [known.arxiv_id]


async def test_a_category_serving_yesterdays_batch_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    async with lab(tmp_path) as w:
        monday = NOW - timedelta(days=1)
        a = submitted(5, days_ago=3)
        b = submitted(6, days_ago=3, categories=("cs.AI",), primary_category="cs.AI")
        w.arxiv.papers = [a, b]
        w.announce((a, "new"), (b, "new"), day=monday)
        await w.rss.run_once()
        assert (await w.worker.deliver_once()).sent == 2

        # Tuesday: cs.LG's part is today's batch; cs.AI's part is Monday's again, rebuilt with today's dates.
        # Tuesday's cs.AI paper is missing from the feed: the API's poll brings it.
        c = submitted(7, days_ago=1)
        d = submitted(8, days_ago=1, categories=("cs.AI",), primary_category="cs.AI")
        w.arxiv.papers += [c, d]
        w.announce((c, "new"), (b, "new"), built=NOW)
        await w.ctx.ingestor().poll_once()
        report = await w.rss.run_once()
        assert report.complete and report.cycle.new == []  # c came with the poll; b is known
        assert (await w.worker.deliver_once()).sent == 2
        assert sorted(w.posted()) == sorted(p.arxiv_id for p in (a, b, c, d))
        store = w.ctx._store
        assert await store.announcements.of_paper(b.arxiv_id) == [
            Announcement(b.arxiv_id, 1, "cs.AI", "new", monday.date())  # the first sighting's day stays
        ]
        assert await store.papers.count() == 4


async def test_a_failing_feed_never_stops_the_api_poll_and_the_next_cycle_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with lab(tmp_path) as w:
        scheduler = Scheduler(w.ctx, w.worker)
        from_api = submitted(9, days_ago=1)
        only_feed = submitted(10, days_ago=12)
        w.arxiv.papers = [from_api, only_feed]
        w.announce((from_api, "new"), (only_feed, "new"))
        w.arxiv.fail_next(503, count=5, endpoint="rss")  # every try of this cycle's one request
        with caplog.at_level(logging.INFO, logger="bot.scheduler"):
            await scheduler.poll()
        assert w.posted() == [from_api.arxiv_id]  # the API's paper is posted all the same
        rss = await w.ctx._store.sources.get(w.rss.source)
        assert rss.consecutive_failures == 1 and "HTTP 503" in (rss.last_error or "")
        assert any("arxiv-rss:cs.AI,cs.LG: stopped early" in r.getMessage() for r in caplog.records)

        # A body cut off on every try: nothing of it is taken, and no validators are kept for it.
        w.clock.advance(1800)
        w.arxiv.truncate_next(count=5, endpoint="rss")
        await scheduler.poll()
        assert w.posted() == [from_api.arxiv_id]
        assert (await w.ctx._store.sources.get(w.rss.source)).consecutive_failures == 2

        w.clock.advance(1800)
        await scheduler.poll()
        assert sorted(w.posted()) == sorted([from_api.arxiv_id, only_feed.arxiv_id])
        rss = await w.ctx._store.sources.get(w.rss.source)
        assert rss.last_error is None and rss.etag is not None
        sent = [r.headers.get("If-None-Match") for r in w.arxiv.requests if r.endpoint == "rss"]
        assert sent == [None] * 11  # never a validator of a failed read


async def test_when_the_api_is_down_the_feed_still_posts_and_the_paper_is_completed_later(
    tmp_path: Path,
) -> None:
    async with lab(tmp_path) as w:
        scheduler = Scheduler(w.ctx, w.worker)
        paper = submitted(
            11, days_ago=2, comment="9 pages", categories=("cs.CV", "cs.LG"), primary_category="cs.CV"
        )
        w.arxiv.papers = [paper]
        w.announce((paper, "cross"))
        w.arxiv.fail_next(503, count=10)  # the poll's request and the completion's, every try
        await scheduler.poll()
        assert w.posted() == [paper.arxiv_id]  # posted from the feed's copy
        stored = await w.ctx.services.history.stored(paper.arxiv_id)
        assert stored is not None and stored.provisional and stored.comment is None
        assert stored.published.date() == TODAY  # provisional: the announcement day
        assert stored.announced == Announcement(paper.arxiv_id, 1, "cs.LG", "cross", TODAY)

        w.clock.advance(1800)
        await scheduler.poll()
        assert await w.ctx.services.history.stored(paper.arxiv_id) == paper  # completed: v1 date, comment
        assert w.posted() == [paper.arxiv_id]


async def test_arxiv_rss_url_off_reads_no_feed(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_path=tmp_path / "db.sqlite3", arxiv_rss_url="off")
    async with open_context(settings, FakeClock(NOW)) as ctx:
        assert ctx.announcements() is None


def test_new_and_cross_announce_new_papers_replacements_do_not() -> None:
    assert Announcement("2611.1", 1, "cs.LG", "new", date(2026, 11, 24)).is_new_paper
    assert not Announcement("2611.1", 2, "cs.LG", "replace-cross", date(2026, 11, 24)).is_new_paper


async def test_the_feed_waits_arxivs_interval_after_the_api_request(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    async with LoopbackArxiv() as arxiv:
        arxiv.set_rss(rss_feed([], announced=NOW))
        settings = Settings(
            _env_file=None,
            database_path=tmp_path / "db.sqlite3",
            arxiv_api_url=arxiv.url,
            arxiv_rss_url=arxiv.rss_url,
            arxiv_min_interval_seconds=3,
            arxiv_categories=CATS,
        )
        async with open_context(settings, clock) as ctx:
            cycle = ctx.announcements()
            assert cycle is not None
            await ctx.ingestor().poll_once()
            assert (await cycle.run_once()).complete
    assert [r.endpoint for r in arxiv.requests] == ["api", "rss"]
    assert clock.sleeps == [3.0]  # one client for both: the second request waited its turn


async def test_a_real_feed_is_not_read_without_a_contact_even_beside_a_loopback_api(tmp_path: Path) -> None:
    async with LoopbackArxiv() as arxiv:
        settings = Settings(
            _env_file=None,
            database_path=tmp_path / "db.sqlite3",
            arxiv_api_url=arxiv.url,  # the API's address is loopback: the poll asks for no contact
            arxiv_rss_url="https://rss.arxiv.org/rss",
        )
        async with open_context(settings, FakeClock(NOW)) as ctx:
            cycle = ctx.announcements()
            assert cycle is not None
            report = await cycle.run_once()
            state = await ctx._store.sources.get(cycle.source)
    assert not report.complete and ctx.arxiv_requests_sent == 0
    assert state.last_error == (
        "ARXIV_CONTACT is not set: set ARXIV_CONTACT to read ARXIV_RSS_URL, or set ARXIV_RSS_URL=off"
    )
    assert "ARXIV_CONTACT is not set" in report.summary()

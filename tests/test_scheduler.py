"""bot.scheduler on the composition root's real parts (loopback arXiv, a real SQLite file, a recording poster):
the jobs it registers and their triggers, a poll that posts only after reading both sources, digests at the
injected clock's hour, recovery of posts left in flight, and a stop that lets the post in flight finish.

Nothing waits on a timer: jobs are inspected, not awaited, and the tests call the jobs' coroutines themselves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import tzlocal
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.clock import FakeClock
from bot.config import Settings
from bot.context import AppContext, open_context
from bot.loopback.arxiv import LoopbackArxiv, rss_feed
from bot.models import Paper
from bot.scheduler import MODEL_CHECK_MINUTES, WAITING, Scheduler
from bot.topics import scorer_store
from bot.topics.scorer import Featurizer, ScorerSet
from tests.factories import make_paper
from tests.fakes.poster import Crash, Post, RecordingPoster

# Past any real clock these tests run on: the poll job, due at the injected "now", never fires by itself.
NOW = datetime(2099, 3, 3, 9, 0, tzinfo=UTC)  # a Tuesday
CHANNEL = 10
DIGEST_CHANNEL = 11


@dataclass
class GatedPoster(RecordingPoster):
    """Holds each card until `release` is set, so a test can act while a post is in flight."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    checks: int = 0  # already_posted calls: the recovery of posts left in flight

    async def post_card(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        self.entered.set()
        await self.release.wait()
        return await super().post_card(channel_id, paper, topics, nonce)

    async def already_posted(self, channel_id: int, papers: Sequence[Paper]) -> set[str]:
        self.checks += 1
        return await super().already_posted(channel_id, papers)


@dataclass
class Lab:
    ctx: AppContext
    arxiv: LoopbackArxiv
    clock: FakeClock
    poster: GatedPoster

    def scheduler(self) -> Scheduler:
        """A scheduler as the bot builds one at start (a new one is a restart)."""
        return Scheduler(self.ctx, self.ctx.delivery_worker(self.poster))

    async def queue(self, papers: Sequence[Paper]) -> None:
        """What a poll leaves behind: the papers stored, matched and queued for the channels that want them."""
        await self.ctx.intake.store_papers(papers, announce=True)


@asynccontextmanager
async def lab(tmp_path: Path, **settings: object) -> AsyncIterator[Lab]:
    """#10 follows every paper whose title says "reinforcement"; the bot is past its first poll (a fresh
    install's first poll is history, never posted)."""
    clock = FakeClock(NOW)
    async with LoopbackArxiv() as arxiv:
        values: dict[str, object] = {
            "database_path": tmp_path / "paperwatch.sqlite3",
            "arxiv_api_url": arxiv.url,
            "arxiv_rss_url": arxiv.rss_url,
            "arxiv_min_interval_seconds": 0,
            "arxiv_categories": ("cs.AI", "cs.LG"),
            **settings,
        }
        async with open_context(Settings(_env_file=None, **values), clock) as ctx:
            assert (await ctx.ingestor().poll_once()).complete
            follows = ctx.services.follows
            await follows.follow(await follows.plan(1, CHANNEL, "RL", query="ti:reinforcement"))
            poster = GatedPoster()
            poster.release.set()  # cards go straight through unless a test holds them
            yield Lab(ctx, arxiv, clock, poster)


def submitted(n: int, hours_ago: float) -> Paper:
    return make_paper(n, published=NOW - timedelta(hours=hours_ago))


async def test_start_registers_the_poll_at_once_then_on_its_interval_deliveries_and_hourly_digests(
    tmp_path: Path,
) -> None:
    async with lab(tmp_path, poll_interval_minutes=20, deliver_interval_seconds=45) as w:
        scheduler = w.scheduler()
        scheduler.start()
        try:
            jobs = {job.id: job for job in scheduler._scheduler.get_jobs()}
            assert set(jobs) == {"poll", "poll lock", "deliver", "digests", "retrain", "scorer model"}
            poll, deliver, digests = jobs["poll"], jobs["deliver"], jobs["digests"]
            assert poll.next_run_time == NOW  # the first poll runs at start, by the injected clock
            assert isinstance(poll.trigger, IntervalTrigger)
            assert poll.trigger.interval == timedelta(minutes=20)
            assert poll.trigger.jitter == 120  # a tenth of the interval, so many bots do not poll in step
            assert isinstance(deliver.trigger, IntervalTrigger)
            assert deliver.trigger.interval == timedelta(seconds=45)
            assert isinstance(digests.trigger, CronTrigger)
            # Each kind of job runs one at a time; a run missed while busy is run once, not many times.
            for job in (poll, deliver, digests):
                assert (job.max_instances, job.coalesce, job.misfire_grace_time) == (1, True, 300)
            # The learned scorer retrains daily, and soon after a start without a model (this one has none);
            # a retraining missed while the bot was down runs when it is back, within hours.
            retrain = jobs["retrain"]
            assert isinstance(retrain.trigger, CronTrigger)
            assert retrain.next_run_time == NOW + timedelta(minutes=5)
            assert (retrain.max_instances, retrain.coalesce, retrain.misfire_grace_time) == (
                1,
                True,
                6 * 3600,
            )
        finally:
            await scheduler.stop()


async def test_a_process_schedules_only_the_work_of_its_roles(tmp_path: Path) -> None:
    async with lab(tmp_path) as w:
        poller = Scheduler(w.ctx, None, poll=True)  # ROLES=poll
        deliverer = Scheduler(w.ctx, w.ctx.delivery_worker(w.poster), poll=False)  # ROLES=deliver
        for scheduler in (poller, deliverer):
            scheduler.start()
        try:
            assert {job.id for job in poller._scheduler.get_jobs()} == {
                "poll",
                "poll lock",
                "retrain",
                "scorer model",
            }
            assert {job.id for job in deliverer._scheduler.get_jobs()} == {
                "deliver",
                "digests",
                "scorer model",
            }
        finally:
            for scheduler in (poller, deliverer):
                await scheduler.stop()


async def test_every_process_takes_the_scorer_model_another_one_trained_and_a_poller_before_it_polls(
    tmp_path: Path,
) -> None:
    """One process trains (the poller daily, a gateway a followed topic) and writes the model into the store;
    the others take it within minutes, and a poller before the papers it scores, without a restart."""
    async with lab(tmp_path) as w:
        deliverer = Scheduler(w.ctx, w.ctx.delivery_worker(w.poster), poll=False)
        deliverer.start()
        try:
            [check] = [job for job in deliverer._scheduler.get_jobs() if job.id == "scorer model"]
            assert isinstance(check.trigger, IntervalTrigger)
            assert check.trigger.interval == timedelta(minutes=MODEL_CHECK_MINUTES)
        finally:
            await deliverer.stop()
        scorer = w.ctx.services.topics.scorer
        assert scorer is not None and scorer.needs_training

        # Another process's training: a model written into the shared store.
        model = tmp_path / "elsewhere.npz"
        scorer_store.save(ScorerSet(Featurizer.fit(["reinforcement learning", "language models"])), model)
        await scorer.store.scorer_models.put(model.read_bytes(), format_version=scorer_store.FORMAT, at=NOW)
        await w.scheduler().poll()
        assert not scorer.needs_training and scorer.loaded_at == NOW


async def test_a_second_poller_on_the_database_waits_for_the_lock_and_takes_it_when_freed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with lab(tmp_path) as w:
        first, second = w.scheduler(), Scheduler(w.ctx, None)
        papers = [submitted(1, 1)]
        w.arxiv.papers = papers
        await first.poll()  # takes the lock
        caplog.set_level("INFO", logger="bot.scheduler")
        requests = len(w.arxiv.requests)
        await second.poll()
        await second.watch_lock()
        assert len(w.arxiv.requests) == requests  # it waits instead of polling
        assert [r.message for r in caplog.records].count(WAITING) == 1  # said once
        await first.stop()  # frees the lock (as the holder's death does)
        await second.watch_lock()
        assert "took the poll lock: this process polls now" in caplog.messages
        await second.poll()
        assert len(w.arxiv.requests) > requests
        await second.stop()


@pytest.fixture
def half_hour_zone() -> Iterator[None]:
    """The host's local time zone is UTC+5:30 (as in India) for the test."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "Asia/Kolkata")
        time.tzset()
        tzlocal.reload_localzone()
        try:
            yield
        finally:
            patch.undo()
            time.tzset()
            tzlocal.reload_localzone()


@pytest.mark.usefixtures("half_hour_zone")
async def test_digests_run_at_the_top_of_every_utc_hour_whatever_the_hosts_time_zone(tmp_path: Path) -> None:
    # digest_hour is an hour of UTC, and the digest job posts those of clock.now().hour: it must fire at :00 UTC.
    async with lab(tmp_path) as w:
        scheduler = w.scheduler()
        scheduler.start()
        try:
            [digests] = [job for job in scheduler._scheduler.get_jobs() if job.id == "digests"]
            after = datetime(2099, 3, 3, 8, 10, tzinfo=UTC)
            assert digests.trigger.get_next_fire_time(None, after) == datetime(2099, 3, 3, 9, 0, tzinfo=UTC)
        finally:
            await scheduler.stop()


async def test_a_poll_posts_only_after_reading_the_api_and_then_the_feed(tmp_path: Path) -> None:
    async with lab(tmp_path) as w:
        from_api = submitted(1, hours_ago=2)
        only_in_feed = make_paper(2, published=NOW - timedelta(days=11))  # outside the API poll's range
        w.arxiv.papers = [from_api, only_in_feed]
        w.arxiv.set_rss(
            rss_feed([(from_api, "new"), (only_in_feed, "new")], announced=NOW), cats="cs.AI+cs.LG"
        )
        asked_before_posting: list[list[str]] = []
        w.poster.before = lambda post: asked_before_posting.append([r.endpoint for r in w.arxiv.requests])
        already_asked = len(w.arxiv.requests)

        await w.scheduler().poll()

        assert sorted(w.poster.cards(CHANNEL)) == sorted([from_api.arxiv_id, only_in_feed.arxiv_id])
        this_poll = [r.endpoint for r in w.arxiv.requests][already_asked:]
        assert (
            this_poll[0] == "api" and "rss" in this_poll
        )  # the API, then the feed (and the API for its paper)
        assert all(asked == [r.endpoint for r in w.arxiv.requests] for asked in asked_before_posting)


async def test_digests_post_the_papers_collected_for_the_clocks_hour_only(tmp_path: Path) -> None:
    async with lab(tmp_path) as w:
        follows = w.ctx.services.follows
        await follows.follow(await follows.plan(1, DIGEST_CHANNEL, "RL", mode="digest", digest_hour=9))
        await w.queue([submitted(1, hours_ago=3), submitted(2, hours_ago=2)])
        scheduler = w.scheduler()
        w.clock.advance(-3600)  # 08:00: not the digest's hour
        await scheduler.digests()
        assert [p.kind for p in w.poster.posts if p.channel_id == DIGEST_CHANNEL] == []
        w.clock.advance(3600)  # 09:00
        await scheduler.digests()
        [digest] = [p for p in w.poster.posts if p.channel_id == DIGEST_CHANNEL]
        assert digest.kind == "digest" and sorted(digest.papers) == [
            make_paper(1).arxiv_id,
            make_paper(2).arxiv_id,
        ]


async def crash_after_posting(w: Lab) -> Paper:
    """A paper queued, posted by Discord, and the process dead before it marked the post sent."""
    paper = submitted(1, hours_ago=1)
    await w.queue([paper])

    def die(post: Post) -> None:
        raise Crash

    w.poster.after = die
    with pytest.raises(Crash):
        await w.scheduler().deliver()
    w.poster.after = None
    return paper


async def test_the_first_delivery_after_a_restart_finds_the_post_left_in_flight_instead_of_posting_it_again(
    tmp_path: Path,
) -> None:
    async with lab(tmp_path) as w:
        paper = await crash_after_posting(w)
        assert (await w.ctx.services.status.of_server(1)).deliveries == {"sending": 1}

        w.clock.advance(61)  # restarted a minute later: Discord may have forgotten the post's nonce
        restarted = w.scheduler()
        await restarted.deliver()
        assert w.poster.checks == 1  # the channel was asked what it shows
        assert (await w.ctx.services.status.of_server(1)).deliveries == {"sent": 1}
        assert w.poster.cards(CHANNEL) == [paper.arxiv_id]  # found, not posted again
        await w.queue([submitted(2, hours_ago=0.5)])
        await restarted.deliver()
        assert w.poster.cards(CHANNEL) == [paper.arxiv_id, make_paper(2).arxiv_id]


async def test_stop_lets_the_post_in_flight_finish_and_leaves_the_rest_queued(tmp_path: Path) -> None:
    async with lab(tmp_path) as w:
        papers = [submitted(n, hours_ago=4 - n) for n in (1, 2, 3)]
        await w.queue(papers)
        scheduler = w.scheduler()
        scheduler.start()
        w.poster.release.clear()
        delivering = asyncio.create_task(scheduler.deliver())
        await w.poster.entered.wait()  # the first card is on its way to Discord

        stopping = asyncio.create_task(scheduler.stop())
        await asyncio.sleep(0)  # stop runs until it waits for the post in flight
        assert not stopping.done()
        w.poster.release.set()
        await asyncio.gather(delivering, stopping)

        assert w.poster.cards(CHANNEL) == [papers[0].arxiv_id]  # finished, and nothing after it
        status = await w.ctx.services.status.of_server(1)
        assert status.deliveries == {"sent": 1, "pending": 2}  # the rest wait for the next start
        await asyncio.sleep(0)  # APScheduler shuts down on its loop's next turn
        assert not scheduler._scheduler.running


async def test_stop_before_start_only_stops_the_worker(tmp_path: Path) -> None:
    # The bot closing before its setup finished: no scheduler to shut down, and no post may begin.
    async with lab(tmp_path) as w:
        await w.queue([submitted(1, hours_ago=1)])
        scheduler = w.scheduler()
        await scheduler.stop()
        await scheduler.deliver()
        assert w.poster.posts == []
        assert (await w.ctx.services.status.of_server(1)).deliveries == {"pending": 1}


async def test_a_post_left_in_flight_a_moment_ago_is_made_again_with_its_nonce_without_reading_the_channel(
    tmp_path: Path,
) -> None:
    async with lab(tmp_path) as w:
        paper = await crash_after_posting(w)
        w.clock.advance(5)  # restarted (or taken over by another worker) seconds later
        await w.scheduler().deliver()
        # No request to read the channel (each one waits its turn under Discord's global limit): the post was
        # made again with its nonce, which Discord answers with the message it already made.
        assert w.poster.checks == 0
        assert w.poster.cards(CHANNEL) == [paper.arxiv_id]  # once
        assert (await w.ctx.services.status.of_server(1)).deliveries == {"sent": 1}

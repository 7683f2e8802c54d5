"""Deliver workers sharing the outbox by channel: a round claims channels a few at a time, so two workers
running at once share them and neither holds them all; and a channel whose worker died is taken over at the next
claim of a running round (as a post starts, a channel is done, or a second after its last claim: also while every
channel of the round waits and no post starts), not a round later. Channels share Discord's global limit evenly: each
posts once before any posts again."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.delivery import DeliveryWorker, enqueue_for_new_papers, nonce_for
from bot.models import Paper
from bot.store import Store
from bot.store.postgres.store import PostgresStore
from tests.factories import make_paper
from tests.fakes.poster import Post, RecordingPoster

pytestmark = pytest.mark.both_back_ends

GUILD = 1


async def queued(store: Store, clock: FakeClock, channels: list[int], count: int) -> list[Paper]:
    """`count` new papers of a topic each of `channels` follows, queued as ingest queues them."""
    rl, _ = await store.topics.save(
        guild_id=0, slug="rl", name="RL", description="", query="ti:x", at=clock.now()
    )
    for channel in channels:
        await store.follows.upsert(
            guild_id=GUILD,
            channel_id=channel,
            topic_id=rl.id,
            mode="each",
            digest_hour=8,
            created_by=None,
            at=clock.now(),
        )
    papers = [make_paper(i, published=clock.now() - timedelta(minutes=10 - i)) for i in range(count)]
    async with store.transaction():
        result = await store.papers.upsert(papers, seen_at=clock.now())
        await enqueue_for_new_papers(store, clock, result, {p.arxiv_id: {rl.id} for p in papers})
    return papers


@dataclass
class YieldingPoster(RecordingPoster):
    """Posts take a turn of the event loop, as a request to Discord does, so workers run side by side; `used`
    holds the channels this one posted to."""

    used: set[int] = field(default_factory=set)

    async def post_card(self, channel_id: int, paper: Paper, topics: object, nonce: str) -> int | None:
        await asyncio.sleep(0)
        self.used.add(channel_id)
        return await super().post_card(channel_id, paper, topics, nonce)  # type: ignore[arg-type]


class WaitingPoster(RecordingPoster):
    """From the 4th post on, posts to `wait_in` wait (once, a bounded while) until `wait_for` has a post, as a
    channel at Discord's rate limit does: a round that took the freed channel over while its own still posted
    posts there meanwhile; one that waited for its own channels to finish first does not, whatever the load."""

    wait_in: int = 0
    wait_for: int = 0
    _posted: asyncio.Event | None = None

    async def post_card(self, channel_id: int, paper: Paper, topics: object, nonce: str) -> int | None:
        posted = self._posted = self._posted or asyncio.Event()
        if channel_id == self.wait_in and len(self.cards(channel_id)) >= 3 and not posted.is_set():
            try:
                await asyncio.wait_for(posted.wait(), timeout=20)  # generous: never reached when it works
            except TimeoutError:
                posted.set()  # it did not come: the rest go on, and the order shows it
        if channel_id == self.wait_for:
            posted.set()
        return await super().post_card(channel_id, paper, topics, nonce)  # type: ignore[arg-type]


async def test_two_workers_in_one_round_share_the_channels(store: Store, clock: FakeClock) -> None:
    channels = list(range(100, 120))
    papers = await queued(store, clock, channels, 3)
    posted: list[Post] = []  # what the channels show, whichever worker posted it
    posters = [YieldingPoster(posts=posted), YieldingPoster(posts=posted)]
    workers = [DeliveryWorker(store, p, clock, worker_id=f"w{i}") for i, p in enumerate(posters)]
    reports = await asyncio.gather(*(w.deliver_once() for w in workers))
    assert sum(r.sent for r in reports) == len(channels) * len(papers)
    assert all(len(p.used) >= 2 for p in posters), [p.used for p in posters]  # neither took every channel
    for channel in channels:  # each paper once, in order, also in a channel one worker left to the other
        assert posters[0].cards(channel) == [p.arxiv_id for p in papers]


async def test_a_dead_workers_channel_is_taken_over_within_the_round_once_its_lease_runs_out(
    store: Store, clock: FakeClock
) -> None:
    dead_channel, live_channel = 100, 200
    papers = await queued(store, clock, [dead_channel, live_channel], 3)
    # What a worker killed with SIGKILL leaves: its lease on a channel (60 s), its first post made by Discord
    # but still 'sending' in the outbox. Its session still shown running (SQLite cannot tell; on PostgreSQL a
    # stuck process): the lease's expiry frees the channel.
    await store.deliveries.keep_alive("killed")
    poster = RecordingPoster()
    await poster.post_card(dead_channel, papers[0], ["RL"], nonce_for(dead_channel, papers[0].arxiv_id))
    assert await store.deliveries.hold(
        "killed", dead_channel, clock.now(), clock.now() + timedelta(seconds=60)
    )
    [first, *_] = await store.deliveries.for_channel(dead_channel, mode="each", now=clock.now())
    await store.deliveries.mark_sending([first.id])

    def slow(post: Post) -> None:
        clock.advance(25)  # each post of the live channel takes a while: the dead lease runs out meanwhile

    poster.before = slow
    worker = DeliveryWorker(store, poster, clock, lease_seconds=60, worker_id="live")
    report = await worker.deliver_once()  # one round: the live channel, then the dead worker's
    assert report.sent == 3 + 2
    assert poster.cards(dead_channel) == [p.arxiv_id for p in papers]  # its post found, not redone, in order
    assert poster.cards(live_channel) == [p.arxiv_id for p in papers]
    assert await store.deliveries.counts(GUILD) == {"sent": 6}


async def test_on_postgres_a_killed_workers_channel_is_taken_over_at_once_not_when_its_lease_runs_out(
    postgres_url: str, clock: FakeClock
) -> None:
    dead_channel, live_channel = 100, 200
    store, other_process = (
        await PostgresStore.open(postgres_url, clock),
        await PostgresStore.open(postgres_url, clock),
    )
    try:
        papers = await queued(store, clock, [dead_channel, live_channel], 3)
        # Another process's worker, running: its lease on a channel (60 s), its first post made by Discord but
        # still 'sending' in the outbox.
        await other_process.deliveries.keep_alive("killed")
        poster = RecordingPoster()
        await poster.post_card(dead_channel, papers[0], ["RL"], nonce_for(dead_channel, papers[0].arxiv_id))
        assert await other_process.deliveries.hold(
            "killed", dead_channel, clock.now(), clock.now() + timedelta(seconds=60)
        )
        [first, *_] = await store.deliveries.for_channel(dead_channel, mode="each", now=clock.now())
        await store.deliveries.mark_sending([first.id])
        worker = DeliveryWorker(store, poster, clock, lease_seconds=60, worker_id="live")

        report = await worker.deliver_once()  # its holder runs: the channel stays its own
        assert report.sent == 3 and poster.cards(dead_channel) == [papers[0].arxiv_id]

        # SIGKILL, as PostgreSQL sees it: the holder's session ends (waited for, up to 60 s), no release, the
        # lease still 60 s from expiry.
        ended = await store.db.fetchall(
            "SELECT pg_terminate_backend(pid, 60000) FROM pg_locks WHERE locktype = 'advisory'"
            " AND (classid::bigint << 32 | objid::bigint) = hashtextextended('paperwatch:deliver:killed', 0)"
        )
        assert [r[0] for r in ended] == [True]
        report = await worker.deliver_once()  # the clock has not moved: the lease has not run out
        assert report.sent == 2
        assert poster.cards(dead_channel) == [
            p.arxiv_id for p in papers
        ]  # its post found, not redone, in order
        assert poster.cards(live_channel) == [p.arxiv_id for p in papers]
        assert await store.deliveries.counts(GUILD) == {"sent": 6}
    finally:
        await store.deliveries.retire("live")
        await other_process.close()
        await store.close()


async def test_a_round_claims_again_while_its_own_channels_post_so_a_freed_channel_does_not_wait_for_them(
    store: Store, clock: FakeClock
) -> None:
    dead_channel, live_channel = 100, 200
    papers = await queued(store, clock, [dead_channel, live_channel], 12)
    await store.deliveries.keep_alive("stuck")  # shown running: only its lease's expiry frees the channel
    assert await store.deliveries.hold(
        "stuck", dead_channel, clock.now(), clock.now() + timedelta(seconds=60)
    )
    poster = WaitingPoster(before=lambda post: clock.advance(25))  # the lease runs out at the 3rd post
    poster.wait_in, poster.wait_for = live_channel, dead_channel
    worker = DeliveryWorker(store, poster, clock, per_channel=12, lease_seconds=600, worker_id="live")
    report = await worker.deliver_once()  # its last claim found nothing: it claims again a second later
    assert report.sent == 24
    order = [p.channel_id for p in poster.posts]
    assert order.index(dead_channel) < len(order) - 1 - order[::-1].index(live_channel), order  # interleaved
    assert poster.cards(dead_channel) == poster.cards(live_channel) == [p.arxiv_id for p in papers]


@dataclass
class BlockingPoster(RecordingPoster):
    """Posts to `blocked` wait until the test lets them go (`go`), as posts to a channel at Discord's rate limit
    wait (discord.py sleeps inside the request): `waiting` is set when the first of them starts."""

    blocked: int = 0
    waiting: asyncio.Event = field(default_factory=asyncio.Event)
    go: asyncio.Event = field(default_factory=asyncio.Event)
    started: list[int] = field(default_factory=list)  # the channel of each post as it starts

    async def post_card(self, channel_id: int, paper: Paper, topics: object, nonce: str) -> int | None:
        self.started.append(channel_id)
        if channel_id == self.blocked:
            self.waiting.set()
            await self.go.wait()
        return await super().post_card(channel_id, paper, topics, nonce)  # type: ignore[arg-type]


async def test_a_round_whose_channels_all_wait_still_claims_again_so_a_freed_channel_is_posted_meanwhile(
    store: Store, clock: FakeClock
) -> None:
    dead_channel, live_channel = 100, 200
    papers = await queued(store, clock, [dead_channel, live_channel], 3)
    await store.deliveries.keep_alive("stuck")  # shown running: only its lease's expiry frees the channel
    assert await store.deliveries.hold(
        "stuck", dead_channel, clock.now(), clock.now() + timedelta(seconds=60)
    )
    dead_channel_posted = asyncio.Event()

    def count(post: Post) -> None:
        if len(poster.cards(dead_channel)) == len(papers):
            dead_channel_posted.set()

    poster = BlockingPoster(after=count, blocked=live_channel)
    worker = DeliveryWorker(store, poster, clock, lease_seconds=600, worker_id="live")
    round_ = asyncio.create_task(worker.deliver_once())
    try:
        # Generous bounds on the waits: each is met at once when it works.
        await asyncio.wait_for(poster.waiting.wait(), timeout=20)
        clock.advance(61)  # the stuck worker's lease runs out while the round's only channel waits
        await asyncio.wait_for(dead_channel_posted.wait(), timeout=20)
        # Taken over and posted with no post of the live channel starting meanwhile: its first still waits.
        assert poster.started.count(live_channel) == 1 and poster.cards(live_channel) == []
        assert poster.cards(dead_channel) == [p.arxiv_id for p in papers]
    finally:
        poster.go.set()
        report = await asyncio.wait_for(round_, timeout=20)
    assert report.sent == 6
    assert poster.cards(live_channel) == [p.arxiv_id for p in papers]
    assert await store.deliveries.counts(GUILD) == {"sent": 6}


@dataclass
class LeaseCountingPoster(RecordingPoster):
    """Counts, at each post, the channels its worker holds (their leases in the store): the most at once."""

    store: Store | None = None
    worker: str = ""
    most_held: int = 0

    async def post_card(self, channel_id: int, paper: Paper, topics: object, nonce: str) -> int | None:
        assert self.store is not None
        row = await self.store.db.fetchone(  # type: ignore[attr-defined]
            "SELECT COUNT(*) FROM delivery_leases WHERE claimed_by = ?", (self.worker,)
        )
        self.most_held = max(self.most_held, int(row[0]))
        return await super().post_card(channel_id, paper, topics, nonce)  # type: ignore[arg-type]


async def test_a_worker_holds_at_most_its_share_of_the_channels_with_posts_due(
    store: Store, clock: FakeClock
) -> None:
    channels = list(range(100, 112))
    papers = await queued(store, clock, channels, 2)
    for other in ("a", "b", "c"):  # three more workers in a round (waiting for channels, say)
        await store.deliveries.keep_alive(other)
        await store.deliveries.share(other, clock.now(), clock.now() + timedelta(seconds=600))
    poster = LeaseCountingPoster(store=store, worker="live")
    worker = DeliveryWorker(store, poster, clock, lease_seconds=600, worker_id="live")
    report = await worker.deliver_once()  # the others never claim: it posts everything, its share at a time
    assert report.sent == len(channels) * len(papers)
    assert poster.most_held == 3  # 12 channels over 4 workers: a worker killed would strand 3
    for channel in channels:
        assert poster.cards(channel) == [p.arxiv_id for p in papers]


class WatchedClock(FakeClock):
    """A FakeClock that says when an alarm is set (a worker waiting for its next claim)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = asyncio.Event()

    def alarm(self, seconds: float) -> asyncio.Future[None]:
        self.armed.set()
        return super().alarm(seconds)


@dataclass
class GatedPoster(RecordingPoster):
    """Every post waits until the test opens the gate, as posts at a channel's rate limit wait; `started`: the
    channels whose first post has started."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    started: set[int] = field(default_factory=set)
    all_started: asyncio.Event = field(default_factory=asyncio.Event)
    expected: int = 0

    async def post_card(self, channel_id: int, paper: Paper, topics: object, nonce: str) -> int | None:
        self.started.add(channel_id)
        if len(self.started) >= self.expected:
            self.all_started.set()
        await self.gate.wait()
        return await super().post_card(channel_id, paper, topics, nonce)  # type: ignore[arg-type]


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait (a bounded while: met at once when it works) for what workers do on the database's time."""
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not within 20 s: {what}")


async def test_a_worker_that_joins_gets_the_channels_beyond_the_first_workers_share(store: Store) -> None:
    clock = WatchedClock()
    channels = list(range(100, 112))
    papers = await queued(store, clock, channels, 2)
    posted: list[Post] = []
    first = GatedPoster(posts=posted, expected=len(channels))
    w1 = DeliveryWorker(store, first, clock, lease_seconds=600, worker_id="first")
    one = asyncio.create_task(w1.deliver())
    second = YieldingPoster(posts=posted)
    w2 = DeliveryWorker(store, second, clock, lease_seconds=600, worker_id="second")
    two = None
    try:
        await until(lambda: len(first.started) == len(channels), "the first, alone, takes every channel")
        clock.armed.clear()
        two = asyncio.create_task(w2.deliver())
        await until(clock.armed.is_set, "the second, finding no channel free, waits to claim again")
        assert second.posts == [] and not two.done()
        clock.advance(1)  # the first claims again: it sees the second and leaves it the channels beyond 6
        await until(lambda: len(w1.yielding) == 6, "the first leaves 6 channels")
        assert w1.yielding == set(channels[6:])  # those it claimed last
        first.gate.set()  # its posts in flight are made; it frees those 6 after them
        while not two.done():  # the second claims again each second, as long as channels have posts due
            clock.armed.clear()
            await until(lambda: clock.armed.is_set() or two.done(), "the second waits or is done")
            clock.advance(1)
        reports = [await asyncio.wait_for(t, timeout=20) for t in (one, two)]
    finally:
        first.gate.set()
        w1.stopping = w2.stopping = True
        clock.advance(5)
    assert sum(r.sent for r in reports) == len(channels) * len(papers)
    # Channels the first left (after their first post), shared again between the two as the first's own were done.
    assert second.used and second.used <= set(channels[6:]), second.used
    for channel in channels:  # each paper once, in order, whichever worker posted it
        assert first.cards(channel) == [p.arxiv_id for p in papers]


async def test_on_postgres_a_worker_with_nothing_to_claim_waits_and_takes_a_killed_workers_channel_a_second_later(
    postgres_url: str,
) -> None:
    clock = WatchedClock()
    dead_channel = 100
    store, other_process = (
        await PostgresStore.open(postgres_url, clock),
        await PostgresStore.open(postgres_url, clock),
    )
    try:
        papers = await queued(store, clock, [dead_channel], 3)
        # Another process's worker, running, holds the only channel with posts due (a 60 s lease).
        await other_process.deliveries.keep_alive("killed")
        assert await other_process.deliveries.hold(
            "killed", dead_channel, clock.now(), clock.now() + timedelta(seconds=60)
        )
        poster = RecordingPoster()
        worker = DeliveryWorker(store, poster, clock, lease_seconds=60, worker_id="live")
        delivering = asyncio.create_task(worker.deliver())  # what the scheduler runs each DELIVER_INTERVAL
        await until(clock.armed.is_set, "the worker, finding no channel free, waits to claim again")
        assert poster.posts == [] and not delivering.done()  # it stays while another holds posts due

        # SIGKILL, as PostgreSQL sees it: the holder's session ends (waited for, up to 60 s), no release.
        await store.db.fetchall(
            "SELECT pg_terminate_backend(pid, 60000) FROM pg_locks WHERE locktype = 'advisory'"
            " AND (classid::bigint << 32 | objid::bigint) = hashtextextended('paperwatch:deliver:killed', 0)"
        )
        clock.advance(1)  # its next claim, a second later: the lease has 59 s to run
        report = await asyncio.wait_for(delivering, timeout=20)  # generous: met at once when it works
        assert report.sent == 3 and poster.cards(dead_channel) == [p.arxiv_id for p in papers]
        assert await store.deliveries.counts(GUILD) == {"sent": 3}
    finally:
        await store.deliveries.retire("live")
        await other_process.close()
        await store.close()


@dataclass
class TimedPoster(RecordingPoster):
    """Records when (on the worker's clock) each card was posted. Each channel's first post waits until every
    channel's has started (as requests in flight together do), so none has posted again before all are running."""

    clock: FakeClock = field(default_factory=FakeClock)
    channels: int = 0
    times: dict[int, list[float]] = field(default_factory=dict)
    all_started: asyncio.Event = field(default_factory=asyncio.Event)

    async def post_card(self, channel_id: int, paper: Paper, topics: object, nonce: str) -> int | None:
        self.times.setdefault(channel_id, []).append(self.clock.monotonic())
        if len(self.times) >= self.channels:
            self.all_started.set()
        await asyncio.wait_for(self.all_started.wait(), timeout=20)  # generous: met at once when it works
        return await super().post_card(channel_id, paper, topics, nonce)  # type: ignore[arg-type]


async def test_channels_share_the_global_limit_evenly_so_every_channel_posts_once_before_any_posts_again(
    store: Store, clock: FakeClock
) -> None:
    # Discord lets a channel post 5 at once; the first channels claimed used to spend the global limit's window on
    # bursts of their own while the others had not posted once (bench_delivery_pg.py's kill run: 1.26x the floor).
    channels = list(range(100, 105))
    papers = await queued(store, clock, channels, 3)
    poster = TimedPoster(clock=clock, channels=len(channels))
    worker = DeliveryWorker(store, poster, clock, lease_seconds=600, global_per_second=10)
    report = await worker.deliver_once()
    assert report.sent == len(channels) * len(papers)
    for channel in channels:
        assert poster.cards(channel) == [p.arxiv_id for p in papers]
    # Each channel's k-th post comes after every channel's (k-1)-th: the channels take the turns in rounds.
    rounds = [[poster.times[c][k] for c in channels] for k in range(len(papers))]
    for earlier, later in itertools.pairwise(rounds):
        assert max(earlier) < min(later), poster.times

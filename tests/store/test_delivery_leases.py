"""The outbox's channel leases (bot/store/deliveries.py), on both back ends: deliver workers never hold the same
channel at once, a lease runs out and is taken over, and concurrent claimers with their own connections split the
channels between them."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.clock import FakeClock
from bot.models import Wanted, WorkShare
from bot.store import Store
from tests.factories import make_paper

GUILD = 7
LEASE = timedelta(seconds=60)


async def queue(store: Store, clock: FakeClock, channels: list[int], papers: int = 2) -> None:
    await store.papers.upsert([make_paper(i) for i in range(papers)], seen_at=clock.now())
    topic = await store.topics.create(guild_id=GUILD, name="T", description="", query="ti:x", at=clock.now())
    wanted = [
        Wanted(GUILD, c, make_paper(i).arxiv_id, "each", topic.id) for c in channels for i in range(papers)
    ]
    await store.deliveries.enqueue(wanted, clock.now())


async def alive(store: Store, *workers: str) -> None:
    """Workers running, as DeliveryWorker shows them before claiming (on PostgreSQL a claimer not shown
    running is taken for killed, and its channels taken over at once)."""
    for worker in workers:
        await store.deliveries.keep_alive(worker)


async def test_a_claimed_channel_is_nobody_elses_until_released_or_expired(
    store: Store, clock: FakeClock
) -> None:
    await queue(store, clock, [100, 200, 300])
    await alive(store, "a", "b", "c", "d")
    now = clock.now()
    assert await store.deliveries.claim_channels("a", "each", now, now + LEASE, limit=2) == [100, 200]
    assert await store.deliveries.claim_channels("b", "each", now, now + LEASE) == [300]
    assert await store.deliveries.claim_channels("c", "each", now, now + LEASE) == []
    assert not await store.deliveries.hold("c", 100, now, now + LEASE)
    assert await store.deliveries.hold("a", 100, now, now + LEASE)  # its own: renewed
    assert await store.deliveries.claim_channels("a", "each", now, now + LEASE) == [100, 200]  # still its own

    await store.deliveries.release("b", [300, 100])  # frees its own only
    assert await store.deliveries.claim_channels("c", "each", now, now + LEASE) == [300]

    clock.advance(LEASE.total_seconds())  # every lease ran out (their workers were killed, say)
    later = clock.now()
    assert await store.deliveries.claim_channels("d", "each", later, later + LEASE) == [100, 200, 300]
    assert not await store.deliveries.hold("a", 100, later, later + LEASE)  # a lost it to d


async def test_channels_with_nothing_due_are_not_claimed_but_rows_left_sending_are(
    store: Store, clock: FakeClock
) -> None:
    await queue(store, clock, [100, 200])
    await alive(store, "a")
    now = clock.now()
    [first] = (await store.deliveries.for_channel(100, mode="each", now=now))[:1]
    await store.deliveries.mark_sent(
        [d.id for d in await store.deliveries.for_channel(200, mode="each", now=now)], 1, now
    )
    await store.deliveries.mark_retry(
        [d.id for d in await store.deliveries.for_channel(100, mode="each", now=now)], now + LEASE, "429"
    )
    assert await store.deliveries.claim_channels("a", "each", now, now + LEASE) == []  # nothing due yet
    await store.deliveries.mark_sending([first.id])  # a worker died posting it
    assert await store.deliveries.claim_channels("a", "each", now, now + LEASE) == [100]
    assert [d.id for d in await store.deliveries.in_flight(channel_id=100)] == [first.id]
    assert await store.deliveries.in_flight(channel_id=200) == []


async def test_claimers_with_their_own_connections_split_the_channels(store: Store, clock: FakeClock) -> None:
    channels = list(range(1, 41))
    await queue(store, clock, channels, papers=1)
    others = [await _reopen(store, clock) for _ in range(3)]  # separate pools, as separate processes have
    try:
        for i, other in enumerate(others * 2):
            await alive(other, f"w{i}")
        now = clock.now()
        claims = await asyncio.gather(
            *(
                s.deliveries.claim_channels(f"w{i}", "each", now, now + LEASE, limit=15)
                for i, s in enumerate(others * 2)
            )
        )
    finally:
        for other in others:
            await other.close()
    flat = [c for claim in claims for c in claim]
    assert len(flat) == len(set(flat))  # no channel claimed twice
    assert sorted(flat) == channels  # 6 claims of up to 15: every channel taken


async def _reopen(store: Store, clock: FakeClock) -> Store:
    """Another store on the same database (its own connections)."""
    from bot.store import SqliteStore, open_store

    if isinstance(store, SqliteStore):
        return await open_store(store.db.path, clock)
    return await open_store(store.db.url, clock)  # type: ignore[attr-defined]


async def test_a_workers_share_counts_the_channels_with_work_over_the_workers_in_a_round(
    store: Store, clock: FakeClock
) -> None:
    await queue(store, clock, [100, 200, 300, 400, 500])
    now = clock.now()
    await store.deliveries.mark_retry(  # rate-limited: not due, not counted
        [d.id for d in await store.deliveries.for_channel(500, mode="each", now=now)], now + LEASE, "429"
    )
    await alive(store, "a", "b", "c")
    assert await store.deliveries.share("a", now, now + LEASE) == WorkShare(busy=4, workers=1)
    assert (await store.deliveries.share("b", now, now + LEASE)).channels == 2  # 4 channels over a and b
    # Held or not, a channel with posts due counts; a worker waiting for channels counts as much as one posting.
    assert await store.deliveries.claim_channels("a", "each", now, now + LEASE, limit=4) == [
        100,
        200,
        300,
        400,
    ]
    assert await store.deliveries.share("c", now, now + timedelta(seconds=5)) == WorkShare(busy=4, workers=3)
    await store.deliveries.leave("b")  # its round is over
    assert (await store.deliveries.share("a", now, now + LEASE)).workers == 2
    clock.advance(5)  # c said it was in a round for 5 s, and said nothing since (killed, say)
    later = clock.now()
    assert (await store.deliveries.share("a", later, later + LEASE)).workers == 1
    assert WorkShare(busy=0, workers=3).channels == 0 and WorkShare(busy=7, workers=3).channels == 3


async def test_on_postgres_a_killed_worker_leaves_the_share_at_once(
    postgres_url: str, clock: FakeClock
) -> None:
    from bot.store import open_store

    store = await open_store(postgres_url, clock)
    killed = await open_store(postgres_url, clock)  # another process's
    try:
        await queue(store, clock, [100, 200])
        now = clock.now()
        await alive(store, "live")
        await alive(killed, "killed")
        await killed.deliveries.share("killed", now, now + LEASE)
        assert await store.deliveries.share("live", now, now + LEASE) == WorkShare(busy=2, workers=2)
        await killed.close()  # its process gone: its session, and with it its liveness lock, ends
        assert await store.deliveries.share("live", now, now + LEASE) == WorkShare(busy=2, workers=1)
    finally:
        await store.deliveries.retire("live")
        await store.close()


async def test_rows_left_sending_say_since_when_unless_one_was_marked_without_a_time(
    store: Store, clock: FakeClock
) -> None:
    await queue(store, clock, [100, 200], papers=2)
    now = clock.now()
    first, second = await store.deliveries.for_channel(100, mode="each", now=now)
    assert await store.deliveries.sending_since(100) is None  # nothing in flight
    await store.deliveries.mark_sending([first.id], now)
    clock.advance(3)
    await store.deliveries.mark_sending([second.id], clock.now())
    assert await store.deliveries.sending_since(100) == now  # the earliest
    [other, _] = await store.deliveries.for_channel(200, mode="each", now=now)
    await store.deliveries.mark_sending([other.id])  # when is not known (a release before the column)
    assert await store.deliveries.sending_since(200) is None

"""Turns under Discord's global rate limit from the store (`DeliveryRepository.take_turn`, bot/pacing.py): on
PostgreSQL one count for every process, so deliver processes together stay within the limit; SQLite leaves the
turns to its one process."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore, Store
from bot.store.postgres.store import PostgresStore

pytestmark = pytest.mark.both_back_ends


async def test_turns_are_shared_by_the_processes_of_a_postgres_store_and_left_to_the_process_on_sqlite(
    store: Store, clock: FakeClock
) -> None:
    now = clock.now()
    if isinstance(store, SqliteStore):
        assert await store.deliveries.take_turn(now, 3, 1.0) is None
        return
    other = await PostgresStore.open(store.db.url, clock)  # type: ignore[attr-defined]  # another process
    try:
        turns = [await s.deliveries.take_turn(now, 3, 1.0) for s in (store, other, store, other, store)]
        end = now + timedelta(seconds=1)  # the window is full after three: the others ask again as it ends
        assert turns == [(now, True), (now, True), (now, True), (end, False), (end, False)]
        assert await other.deliveries.take_turn(now + timedelta(seconds=0.5), 3, 1.0) == (end, False)
        # Asked again as it ends, a new window starts: refusals booked nothing in it, so it has all three turns.
        assert [await s.deliveries.take_turn(end, 3, 1.0) for s in (other, store, other, store)] == [
            (end, True),
            (end, True),
            (end, True),
            (end + timedelta(seconds=1), False),
        ]
        idle = now + timedelta(seconds=60)
        assert await other.deliveries.take_turn(idle, 3, 1.0) == (idle, True)  # a new window with the request
    finally:
        await other.close()


async def test_a_process_killed_while_its_requests_waited_leaves_the_next_window_whole_to_the_others(
    postgres_url: str, clock: FakeClock
) -> None:
    killed, running = [await PostgresStore.open(postgres_url, clock) for _ in range(2)]
    try:
        now = clock.now()
        for _ in range(4):  # the window's turns, then requests left waiting: their process is killed
            await killed.deliveries.take_turn(now, 3, 1.0)
        await killed.close()
        end = now + timedelta(seconds=1)
        turns = [await running.deliveries.take_turn(end, 3, 1.0) for _ in range(3)]
    finally:
        await running.close()
    assert turns == [(end, True)] * 3  # not two, one of the window's three gone with the killed process


async def test_processes_taking_turns_at_once_get_the_windows_a_single_count_gives(
    postgres_url: str, clock: FakeClock
) -> None:
    stores = [await PostgresStore.open(postgres_url, clock) for _ in range(3)]
    try:
        now, end = clock.now(), clock.now() + timedelta(seconds=1.05)
        turns = await asyncio.gather(*(s.deliveries.take_turn(now, 10, 1.05) for s in stores * 15))
        again = await asyncio.gather(*(s.deliveries.take_turn(end, 10, 1.05) for s in stores * 5))
    finally:
        for s in stores:
            await s.close()
    assert Counter(turns) == {(now, True): 10, (end, False): 35}  # 45 asked at once, 10 to a window
    assert Counter(again) == {(end, True): 10, (end + timedelta(seconds=1.05), False): 5}

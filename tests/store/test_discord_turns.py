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
        assert turns == [now, now, now, now + timedelta(seconds=1), now + timedelta(seconds=1)]
        later = now + timedelta(seconds=1.5)  # in the second window, which has room for one more
        assert await other.deliveries.take_turn(later, 3, 1.0) == later
        assert await store.deliveries.take_turn(later, 3, 1.0) == now + timedelta(seconds=2)
        idle = now + timedelta(seconds=60)
        assert await other.deliveries.take_turn(idle, 3, 1.0) == idle  # a new window with the request
    finally:
        await other.close()


async def test_processes_taking_turns_at_once_get_the_windows_a_single_count_gives(
    postgres_url: str, clock: FakeClock
) -> None:
    stores = [await PostgresStore.open(postgres_url, clock) for _ in range(3)]
    try:
        now = clock.now()
        turns = await asyncio.gather(*(s.deliveries.take_turn(now, 10, 1.05) for s in stores * 15))
    finally:
        for s in stores:
            await s.close()
    per_window = Counter(turns)
    assert sorted(per_window.values()) == [5, 10, 10, 10, 10]  # 45 turns, 10 to a window
    assert sorted(per_window) == [now + timedelta(seconds=1.05 * k) for k in range(5)]

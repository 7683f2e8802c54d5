"""Reads never queue behind the writer: a write transaction held open (a batch of a history match, an ingest)
leaves every read answering with committed data, on both back ends; on PostgreSQL a read held by the server
(waiting on a lock) does not hold another read either."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.clock import FakeClock
from bot.store import Store
from tests.factories import make_paper

BOUND = 30.0  # generous: a read that is not held answers in milliseconds


async def test_a_write_transaction_held_open_does_not_hold_reads(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert([make_paper(1)], seen_at=clock.now())
    written, release = asyncio.Event(), asyncio.Event()

    async def writer() -> None:
        async with store.transaction():
            await store.papers.upsert([make_paper(2)], seen_at=clock.now())
            written.set()
            await release.wait()

    task = asyncio.create_task(writer())  # created outside the transaction: its reads are not the writer's
    try:
        await asyncio.wait_for(written.wait(), BOUND)
        # Committed data only, and at once, while the writer holds its lock and its transaction.
        assert await asyncio.wait_for(store.papers.count(), BOUND) == 1
        assert await asyncio.wait_for(store.papers.get(make_paper(2).arxiv_id), BOUND) is None
        assert not task.done()
    finally:
        release.set()
        await asyncio.wait_for(task, BOUND)
    assert await store.papers.count() == 2


async def _waiting_on_lock(conn: Any) -> None:
    while not await conn.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    ):
        pass  # each look is a round trip to the server: the held read gets there meanwhile


async def test_a_read_held_by_the_server_does_not_hold_another_read(
    postgres_url: str, clock: FakeClock
) -> None:
    from bot.store.postgres import PostgresStore

    store = await PostgresStore.open(postgres_url, clock)
    try:
        await store.papers.upsert([make_paper(1)], seen_at=clock.now())
        async with store.db.pool.acquire() as holder:
            await holder.execute("SELECT pg_advisory_lock(7)")
            held = asyncio.create_task(store.db.fetchall("SELECT pg_advisory_lock(7)"))
            await asyncio.wait_for(_waiting_on_lock(holder), BOUND)  # it holds a connection, waiting
            assert await asyncio.wait_for(store.papers.count(), BOUND) == 1
            assert not held.done()
            await holder.execute("SELECT pg_advisory_unlock(7)")
            await asyncio.wait_for(held, BOUND)
    finally:
        await store.close()

"""Reads on a pool of read-only connections: one slow read never holds another, and writes stay on the writer."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore
from tests.factories import make_paper

BOUND = 30.0  # generous: a read that is not held answers in milliseconds


@contextmanager
def gate_released() -> Iterator[threading.Event]:
    gate = threading.Event()
    try:
        yield gate
    finally:
        gate.set()  # never leave a connection's thread blocked


async def install_gate(store: SqliteStore, gate: threading.Event, entered: asyncio.Event) -> None:
    """`slow()`, a SQL function that signals it started, then blocks its connection until the gate opens."""
    loop = asyncio.get_running_loop()

    def slow() -> int:
        loop.call_soon_threadsafe(entered.set)
        gate.wait(BOUND)
        return 1

    for conn in store.db.connections():
        await conn.create_function("slow", 0, slow)


@pytest.mark.sqlite_only
async def test_a_slow_read_does_not_hold_another_read(store: SqliteStore, clock: FakeClock) -> None:
    await store.papers.upsert([make_paper(1)], seen_at=clock.now())
    entered = asyncio.Event()
    with gate_released() as gate:
        await install_gate(store, gate, entered)
        slow = asyncio.create_task(store.db.fetchall("SELECT slow()"))
        await asyncio.wait_for(entered.wait(), BOUND)
        # The slow read holds its connection; another read gets one of its own and answers.
        assert await asyncio.wait_for(store.papers.count(), BOUND) == 1
        assert not slow.done()
        gate.set()
        assert [tuple(r) for r in await slow] == [(1,)]


@pytest.mark.sqlite_only
async def test_read_connections_refuse_writes(store: SqliteStore) -> None:
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await store.db.fetchall("DELETE FROM papers")


async def test_a_read_in_a_transaction_sees_its_own_writes(store: SqliteStore, clock: FakeClock) -> None:
    async with store.transaction():
        await store.papers.upsert([make_paper(1)], seen_at=clock.now())
        assert await store.papers.count() == 1

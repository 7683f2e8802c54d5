"""A store read given a deadline is stopped inside the database once it passes (SQLite: the read connection's
progress handler; PostgreSQL: the read's statement_timeout), raising ReadTimedOut, and leaves no bound behind on
its connection for the next read. On SQLite a read without a deadline runs with no progress handler at all (a
Python call every few hundred steps, each waiting for the GIL while the event loop's thread is busy)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from bot.errors import ReadTimedOut
from bot.store import SqliteStore, Store
from bot.store.database import READERS, Deadline
from bot.store.postgres import PostgresStore
from tests.database_clock import DatabaseClock
from tests.factories import make_paper

QUERY = '"ocelot"*'  # a prefix every paper's words start with


@pytest.fixture
def clock() -> DatabaseClock:
    return DatabaseClock()


async def fill(store: Store, clock: DatabaseClock) -> Store:
    papers = [
        make_paper(n, title=f"Ocelot study {n}", abstract="ocelots " * (1 + n % 7) + f"ocelotine {n}.")
        for n in range(300)
    ]
    await store.papers.upsert(papers, seen_at=clock.now())
    return store


@pytest.fixture
async def crowded(store: Store, clock: DatabaseClock) -> Store:
    return await fill(store, clock)


def ranked(store: Store, deadline: float | None = None) -> asyncio.Future[list[int]]:
    return asyncio.ensure_future(store.search.ranked_ids(QUERY, pool=200, deadline=deadline))


@pytest.mark.sqlite_only
async def test_a_ranking_past_its_deadline_is_stopped_inside_sqlite_and_the_next_reads_are_not(
    crowded: SqliteStore, clock: DatabaseClock
) -> None:
    expected = await ranked(crowded)
    assert len(expected) == 200
    assert clock.looks_from_the_database == 0  # a read without a deadline never looks at the clock

    clock.slow = True  # every look the statement takes at the clock finds a second gone
    with pytest.raises(ReadTimedOut):
        await ranked(crowded, deadline=clock.monotonic() + 2.5)
    assert clock.looks_from_the_database == 3  # stopped at its third look, mid-statement
    with pytest.raises(ReadTimedOut):
        await crowded.search.count(QUERY, cap=1000, deadline=clock.monotonic() + 0.5)

    # Time moved past both deadlines: one left on any read connection would stop its next statement.
    clock.slow = False
    for _ in range(2 * READERS):  # every connection in turn
        assert await ranked(crowded) == expected
        assert await ranked(crowded, deadline=clock.monotonic() + 0.12) == expected
    assert await crowded.search.count(QUERY, cap=1000) == 300


@pytest.mark.sqlite_only
async def test_only_reads_with_a_deadline_run_sqlites_progress_handler(
    tmp_path: Path, clock: DatabaseClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    passed = Deadline.passed

    def counted(deadline: Deadline) -> int:  # the real handler, counted
        calls.append(1)
        return passed(deadline)

    monkeypatch.setattr(Deadline, "passed", counted)  # before the store opens its read connections
    store = await fill(await SqliteStore.open(tmp_path / "paperwatch.sqlite3", clock), clock)
    try:
        for _ in range(READERS):  # every connection in turn
            expected = await ranked(store)
            assert calls == []
        for _ in range(2 * READERS):  # with a deadline, then without, on every connection
            assert await ranked(store, deadline=clock.monotonic() + 30) == expected
            assert calls  # the handler ran: it would have stopped the statement had the deadline passed
            calls.clear()
            assert await ranked(store) == expected
            assert await store.search.count(QUERY, cap=1000) == 300
            assert calls == []
    finally:
        await store.close()


async def test_a_read_whose_deadline_passed_already_reads_nothing(
    crowded: Store, clock: DatabaseClock
) -> None:
    with pytest.raises(ReadTimedOut):
        await ranked(crowded, deadline=clock.monotonic() - 0.001)
    assert len(await ranked(crowded, deadline=clock.monotonic() + 0.12)) == 200


async def test_a_ranking_past_its_deadline_is_stopped_by_postgresql(
    postgres_url: str, clock: DatabaseClock
) -> None:
    """The ranking waits on a lock another session holds, for as long as it holds it: only the read's
    statement_timeout ends the wait."""
    store = await PostgresStore.open(postgres_url, clock)
    try:
        await fill(store, clock)
        expected = await ranked(store)
        other = await asyncpg.connect(postgres_url)
        try:
            async with other.transaction():
                await other.execute("LOCK TABLE papers IN ACCESS EXCLUSIVE MODE")
                with pytest.raises(ReadTimedOut):
                    await ranked(store, deadline=clock.monotonic() + 0.05)
        finally:
            await other.close()
        for _ in range(8):  # the pool's connections: none keeps the read's timeout
            assert (await store.db.fetchone("SHOW statement_timeout"))[0] == "0"
        assert await ranked(store, deadline=clock.monotonic() + 30) == expected
    finally:
        await store.close()

"""The deployment-wide process lock (the poller's), on both back ends: one holder at a time, freed when the holder
lets go or its session ends, then taken by the next; a holder whose session ended takes it again once free."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from bot.clock import FakeClock
from bot.store import Store, open_store
from bot.store.postgres.database import AdvisoryLock


async def other_store(store: Store, clock: FakeClock) -> Store:
    """Another store on the same database: its own connections, as another process has."""
    where = store.db.url if hasattr(store.db, "url") else store.db.path  # type: ignore[attr-defined]
    return await open_store(where, clock)


async def test_one_holder_at_a_time_and_the_next_takes_it_when_freed(store: Store, clock: FakeClock) -> None:
    other = await other_store(store, clock)
    try:
        first, second = store.process_lock("poll"), other.process_lock("poll")
        assert await first.try_acquire()
        assert await first.try_acquire()  # still held
        assert not await second.try_acquire()
        assert await other.process_lock("another").try_acquire()  # locks of other names are apart
        await first.release()
        assert await second.try_acquire()
        assert not await first.try_acquire()
        await second.release()
    finally:
        await other.close()


async def test_a_holder_whose_session_ended_loses_the_lock_and_takes_it_again_once_free(
    postgres_url: str,
) -> None:
    url = postgres_url
    first, second = AdvisoryLock(url, "poll"), AdvisoryLock(url, "poll")
    assert await first.try_acquire()
    admin = await asyncpg.connect(url)
    try:
        # The holder's session ends (killed process, restarted server): the lock is free for another.
        ended = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted"
        )
        assert ended == 1
        assert await second.try_acquire()
        assert not await first.try_acquire()  # noticed its session is gone; the lock is the other's now
        await second.release()
        assert await first.try_acquire()
    finally:
        await admin.close()
        await first.release()


async def test_a_holder_checked_twice_at_once_keeps_its_lock(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The poller's job and its lock watch may check the lock at the same moment: the second check waits for the
    first (one connection runs one statement at a time) instead of taking the busy session for a lost one."""
    url = postgres_url
    holder, other = AdvisoryLock(url, "poll"), AdvisoryLock(url, "poll")
    try:
        assert await holder.try_acquire()
        assert await asyncio.gather(*(holder.try_acquire() for _ in range(5))) == [True] * 5
        assert not await other.try_acquire()  # the lock never left its holder
        assert "taking the lock again" not in caplog.text
    finally:
        await holder.release()
        await other.release()


async def test_a_holder_whose_check_fails_with_a_client_error_takes_the_lock_again(
    postgres_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server restarting under a check can leave asyncpg's connection in a broken state, whose next statement
    raises a client error rather than a network or server one: the check still answers (the session is lost, the
    lock taken again), where it used to raise into the scheduler's lock watch."""
    holder = AdvisoryLock(postgres_url, "poll")
    try:
        assert await holder.try_acquire()
        broken = holder._conn
        fetchval = asyncpg.connection.Connection.fetchval

        async def cut(conn: asyncpg.Connection, *args: object, **kwargs: object) -> object:
            if conn is broken:
                raise asyncpg.InternalClientError(
                    "cannot switch to state 11; another operation is in progress"
                )
            return await fetchval(conn, *args, **kwargs)

        monkeypatch.setattr(asyncpg.connection.Connection, "fetchval", cut)
        # Its broken session dropped (the server frees its lock as it sees the session end), the lock taken again:
        # at once, or at a later check (the scheduler's comes every few seconds).
        taken = await holder.try_acquire()
        for _ in range(500):
            if taken:
                break
            await asyncio.sleep(0.01)
            taken = await holder.try_acquire()
        assert taken
        assert holder._conn is not None and holder._conn is not broken
        assert "taking the lock again" in caplog.text
        assert not await AdvisoryLock(postgres_url, "poll").try_acquire()  # held: by the new session
    finally:
        await holder.release()

"""The global rate limit's pacer (bot/pacing.py) under a FakeClock: at most the limit of requests in each window,
a backlog going the limit at a time as soon as a window ends; turns from the store (shared by every deliver
process) when it gives them, the process's own when the store serves one process (SQLite) or cannot be reached."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest

from bot.clock import FakeClock
from bot.pacing import GlobalPacer, Turns


def most_in_any_second(times: Sequence[float]) -> int:
    """The most requests within one second, wherever it starts (Discord's second starts with a request)."""
    return max(sum(1 for u in times if t <= u < t + 1.0) for t in times)


async def granted(pacer: GlobalPacer, clock: FakeClock, count: int) -> list[float]:
    times = []
    for _ in range(count):
        await pacer.acquire()
        times.append(clock.monotonic())
    return times


async def test_alone_a_process_sends_the_limit_at_once_then_the_rest_a_window_at_a_time() -> None:
    clock = FakeClock()
    pacer = GlobalPacer(clock, limit=50, window=1.05)
    start = clock.monotonic()
    times = await granted(pacer, clock, 120)
    assert times[:50] == [start] * 50  # a burst of 50: Discord allows them in one second
    assert times[50:100] == [pytest.approx(start + 1.05)] * 50  # the next 50 when the window ends
    assert times[100:] == [pytest.approx(start + 2.1)] * 20
    assert most_in_any_second(times) == 50
    assert clock.sleeps == [pytest.approx(1.05)] * 2  # a request within the limit never waits


async def test_requests_asked_at_once_go_in_turn_within_the_limit() -> None:
    clock = FakeClock()
    pacer = GlobalPacer(clock, limit=10, window=1.0)
    times: list[float] = []

    async def one() -> None:
        await pacer.acquire()
        times.append(clock.monotonic())

    await asyncio.gather(*(one() for _ in range(35)))
    assert len(times) == 35
    assert most_in_any_second(times) <= 10


def test_a_window_over_starts_again_with_the_next_request_and_a_full_one_passes_its_turns_on() -> None:
    turns = Turns()
    assert [turns.take(10.0, 3, 1.0) for _ in range(3)] == [10.0, 10.0, 10.0]
    assert turns.take(10.5, 3, 1.0) == 11.0  # full: the next window, when this one ends
    assert turns.take(10.6, 3, 1.0) == 11.0
    assert turns.take(11.2, 3, 1.0) == 11.2  # in that window, asked after it began
    assert turns.take(11.3, 3, 1.0) == 12.0
    assert turns.take(15.0, 3, 1.0) == 15.0  # long idle: a window starts with the request


async def test_turns_come_from_the_store_when_it_shares_them() -> None:
    clock = FakeClock()
    asked: list[tuple[datetime, int, float]] = []

    async def shared(now: datetime, limit: int, window: float) -> datetime | None:
        asked.append((now, limit, window))
        return now + timedelta(seconds=0.25 * len(asked))  # the other processes took turns meanwhile

    pacer = GlobalPacer(clock, limit=50, window=1.05)
    pacer.share(shared)
    start = clock.now()
    await granted(pacer, clock, 2)
    assert asked == [(start, 50, 1.05), (start + timedelta(seconds=0.25), 50, 1.05)]
    assert clock.sleeps == [0.25, 0.5]  # each waited until its turn


async def test_a_store_of_one_process_leaves_the_turns_to_the_process() -> None:
    clock = FakeClock()
    calls = 0

    async def sqlite(now: datetime, limit: int, window: float) -> datetime | None:
        nonlocal calls
        calls += 1
        return None

    pacer = GlobalPacer(clock, limit=10, window=1.0)
    pacer.share(sqlite)
    times = await granted(pacer, clock, 25)
    assert calls == 1  # asked once
    assert most_in_any_second(times) == 10


async def test_while_the_database_is_away_the_process_paces_itself_then_shares_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    away = True

    async def shared(now: datetime, limit: int, window: float) -> datetime | None:
        if away:
            raise ConnectionError("the database is restarting")
        return now + timedelta(seconds=2)

    pacer = GlobalPacer(clock, limit=10, window=1.0)
    pacer.share(shared)
    times = await granted(pacer, clock, 25)
    assert most_in_any_second(times) == 10
    assert caplog.text.count("pacing this process alone") == 1  # said once, not per request
    away = False
    before = list(clock.sleeps)
    await pacer.acquire()
    assert clock.sleeps == [*before, 2.0]  # the store's turn again

"""The global rate limit's pacer (bot/pacing.py) under a FakeClock: at most the limit of requests in each window,
a backlog going the limit at a time as soon as a window ends; turns from the store (shared by every deliver
process) when it gives them, the process's own when the store serves one process (SQLite) or cannot be reached."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
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

    async def shared(now: datetime, limit: int, window: float) -> tuple[datetime, bool] | None:
        asked.append((now, limit, window))
        return now + timedelta(seconds=0.25 * len(asked)), True  # in a window the other processes began later

    pacer = GlobalPacer(clock, limit=50, window=1.05)
    pacer.share(shared)
    start = clock.now()
    await granted(pacer, clock, 2)
    assert asked == [(start, 50, 1.05), (start + timedelta(seconds=0.25), 50, 1.05)]
    assert clock.sleeps == [0.25, 0.5]  # each waited until its turn


async def test_a_request_the_store_refuses_asks_again_when_the_full_window_ends() -> None:
    clock = FakeClock()
    start = clock.now()
    end = start + timedelta(seconds=1.05)
    asked: list[datetime] = []

    async def shared(now: datetime, limit: int, window: float) -> tuple[datetime, bool] | None:
        asked.append(now)
        return (end, False) if now < end else (now, True)  # full until it ends, then a turn at once

    pacer = GlobalPacer(clock, limit=50, window=1.05)
    pacer.share(shared)
    await pacer.acquire()
    assert asked == [start, end]  # refused, then asked again as the window ended, and given its turn
    assert clock.sleeps == [pytest.approx(1.05)]


async def test_a_store_of_one_process_leaves_the_turns_to_the_process() -> None:
    clock = FakeClock()
    calls = 0

    async def sqlite(now: datetime, limit: int, window: float) -> tuple[datetime, bool] | None:
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

    async def shared(now: datetime, limit: int, window: float) -> tuple[datetime, bool] | None:
        if away:
            raise ConnectionError("the database is restarting")
        return now + timedelta(seconds=2), True

    pacer = GlobalPacer(clock, limit=10, window=1.0)
    pacer.share(shared)
    times = await granted(pacer, clock, 25)
    assert most_in_any_second(times) == 10
    assert caplog.text.count("pacing this process alone") == 1  # said once, not per request
    away = False
    before = list(clock.sleeps)
    await pacer.acquire()
    assert clock.sleeps == [*before, 2.0]  # the store's turn again


def one_turn_a_second(clock: FakeClock) -> Callable[[datetime, int, float], Awaitable[tuple[datetime, bool]]]:
    """The store's turns, one in each window of a second, as PostgreSQL gives them: a full window answers when
    it ends."""
    window_start: list[datetime] = []

    async def shared(now: datetime, limit: int, window: float) -> tuple[datetime, bool]:
        await asyncio.sleep(0)  # a round trip: the other requests go on meanwhile
        if not window_start or now >= window_start[-1] + timedelta(seconds=1):
            window_start.append(now)
            return now, True
        return window_start[-1] + timedelta(seconds=1), False

    return shared


async def test_the_requests_of_the_channels_with_the_most_posts_to_make_take_the_turns_first() -> None:
    clock = FakeClock()
    pacer = GlobalPacer(clock, limit=1, window=1.0)
    pacer.share(one_turn_a_second(clock))
    pacer.backlog.update({1: 1, 2: 5, 3: 3, 4: 8})  # posts each channel still has to make
    start = clock.monotonic()
    went: dict[int, float] = {}

    async def post(channel_id: int) -> None:
        await pacer.acquire(channel_id)
        went[channel_id] = clock.monotonic() - start

    await asyncio.gather(*(post(c) for c in (1, 2, 3, 4)))  # asked in this order
    # The first asked took the free turn; then the longest backlogs, not the order asked (2, 3, 4).
    assert went == {1: 0.0, 4: pytest.approx(1.0), 2: pytest.approx(2.0), 3: pytest.approx(3.0)}


async def test_a_request_refused_gives_way_to_a_more_pressing_one_that_came_while_it_waited() -> None:
    clock = FakeClock()
    pacer = GlobalPacer(clock, limit=1, window=1.0)
    turns = one_turn_a_second(clock)
    went: dict[int, float] = {}
    start = clock.monotonic()
    later: list[asyncio.Task[None]] = []

    async def post(channel_id: int) -> None:
        await pacer.acquire(channel_id)
        went[channel_id] = clock.monotonic() - start

    async def shared(now: datetime, limit: int, window: float) -> tuple[datetime, bool]:
        turn = await turns(now, limit, window)
        if (
            not turn[1] and not later
        ):  # 2 refused: 3, with more to post, asks while 2 waits for the window's end
            later.append(asyncio.create_task(post(3)))
        return turn

    pacer.share(shared)
    pacer.backlog.update({1: 2, 2: 2, 3: 9})
    await asyncio.gather(post(1), post(2))
    await later[0]
    assert went == {1: 0.0, 3: pytest.approx(1.0), 2: pytest.approx(2.0)}


async def test_a_request_cancelled_while_waiting_to_ask_leaves_the_others_their_turns() -> None:
    clock = FakeClock()
    pacer = GlobalPacer(clock, limit=1, window=1.0)
    turns = one_turn_a_second(clock)
    tasks: list[asyncio.Task[None]] = []

    async def shared(now: datetime, limit: int, window: float) -> tuple[datetime, bool]:
        turn = await turns(now, limit, window)  # meanwhile 2 and 3 wait for 1's asking
        if not tasks[1].done():
            tasks[1].cancel()  # 2's request given up (its post cancelled) while it waits
        return turn

    pacer.share(shared)
    pacer.backlog.update({1: 1, 2: 5, 3: 3})
    tasks.extend(asyncio.create_task(pacer.acquire(c)) for c in (1, 2, 3))
    await asyncio.gather(*tasks, return_exceptions=True)
    assert tasks[1].cancelled() and tasks[2].done() and not tasks[2].cancelled()
    await asyncio.wait_for(pacer.acquire(1), timeout=60)  # the asking is free again

"""The clocks' alarm: a wait of at most N seconds of the clock's time, which something else may end sooner. A fake
clock's alarm goes off only when the test (or a sleep) moves its time past the deadline; waiting moves no time."""

from __future__ import annotations

import asyncio

from bot.clock import FakeClock, SystemClock


async def turns(n: int = 5) -> None:
    """Let the event loop run everything ready, a few times over."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_fake_alarm_goes_off_when_advanced_time_reaches_it_and_never_moves_time() -> None:
    clock = FakeClock()
    start, mono = clock.now(), clock.monotonic()
    alarm = clock.alarm(1.0)
    await turns()
    assert not alarm.done()
    assert (clock.now(), clock.monotonic()) == (start, mono)  # waiting on it moved no time
    clock.advance(0.6)
    await turns()
    assert not alarm.done()  # 0.6 s of its 1 s
    clock.advance(0.4)
    await turns()
    assert alarm.done() and alarm.result() is None
    assert clock.sleeps == []  # not a sleep


async def test_a_fake_alarms_deadline_is_taken_when_it_is_set_not_when_it_is_first_awaited() -> None:
    clock = FakeClock()
    alarm = clock.alarm(1.0)
    clock.advance(1.0)  # before anything awaits it
    await turns()
    assert alarm.done()


async def test_a_fake_sleep_past_an_alarm_sets_it_off() -> None:
    clock = FakeClock()
    alarm = clock.alarm(5.0)
    await turns()
    await clock.sleep(2.0)
    await turns()
    assert not alarm.done()
    await clock.sleep(3.0)
    await turns()
    assert alarm.done()


async def test_fake_alarms_go_off_each_at_its_own_deadline() -> None:
    clock = FakeClock()
    alarms = {s: clock.alarm(s) for s in (1.0, 2.0, 3.0)}
    await turns()
    clock.advance(2.5)
    await turns()
    assert {s for s, a in alarms.items() if a.done()} == {1.0, 2.0}
    clock.advance(10)
    await turns()
    assert all(a.done() for a in alarms.values())


async def test_a_fake_alarm_already_due_goes_off_at_once() -> None:
    clock = FakeClock()
    mono = clock.monotonic()
    await asyncio.wait_for(clock.alarm(0), timeout=60)  # generous: it never waits on time
    await asyncio.wait_for(clock.alarm(-3), timeout=60)
    assert clock.monotonic() == mono


async def test_a_cancelled_fake_alarm_is_dropped_and_others_still_go_off() -> None:
    clock = FakeClock()
    cancelled, kept = clock.alarm(1.0), clock.alarm(1.0)
    await turns()
    cancelled.cancel()
    await turns()
    clock.advance(1.0)  # setting off the cancelled one must not raise
    await turns()
    assert cancelled.cancelled() and kept.done() and kept.result() is None


async def test_a_system_alarm_is_a_sleep_that_can_be_ended_sooner() -> None:
    clock = SystemClock()
    await asyncio.wait_for(clock.alarm(0), timeout=60)  # due: returns at once
    await asyncio.wait_for(clock.alarm(-1), timeout=60)
    alarm = clock.alarm(3600)
    await turns()
    assert not alarm.done()  # it waits on real time
    alarm.cancel()  # what its waiter does when something else came first
    await turns()
    assert alarm.cancelled()

"""Injected time. Code that waits or reads the time takes a Clock, so tests control time without sleeping."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Current wall time, tz-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (for intervals)."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    def alarm(self, seconds: float) -> asyncio.Future[None]:
        """A future done `seconds` of this clock's time from now (the deadline is taken at the call): for a wait
        that something else may end sooner, waited on alongside it and cancelled after. Unlike `sleep`, it
        never moves a clock's time."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def alarm(self, seconds: float) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        alarm: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(max(0.0, seconds), _ring, alarm)
        alarm.add_done_callback(lambda _: timer.cancel())  # cancelled: no timer left behind
        return alarm


def _ring(alarm: asyncio.Future[None]) -> None:
    if not alarm.done():  # a cancelled alarm stays cancelled
        alarm.set_result(None)


class FakeClock:
    """A clock for tests: sleeping advances time at once and is recorded, so tests can assert on waits. An alarm
    goes off only when the test (`advance`) or a sleep moves time past it: waiting on one moves no time."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
        self._mono = 1000.0
        self.sleeps: list[float] = []
        self._alarms: list[tuple[float, asyncio.Future[None]]] = []  # (monotonic deadline, alarm)

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._mono += seconds
        due = [alarm for deadline, alarm in self._alarms if deadline <= self._mono]
        self._alarms = [(d, alarm) for d, alarm in self._alarms if d > self._mono and not alarm.done()]
        for alarm in due:
            _ring(alarm)

    async def sleep(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.sleeps.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)  # still yield to the loop, like a real sleep

    def alarm(self, seconds: float) -> asyncio.Future[None]:
        alarm: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if seconds <= 0:
            _ring(alarm)  # due already
        else:
            self._alarms.append((self._mono + seconds, alarm))
        return alarm

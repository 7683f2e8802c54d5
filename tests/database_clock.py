"""A clock whose time passes while the database works, to drive a read's deadline without waiting: each look a
SQLite connection's progress handler takes at the clock (on that connection's thread, every few hundred VM steps
of a statement) finds `step` seconds gone, while `slow`. Looks from the event loop move no time."""

from __future__ import annotations

import asyncio

from bot.clock import FakeClock


class DatabaseClock(FakeClock):
    def __init__(self, step: float = 1.0) -> None:
        super().__init__()
        self.step = step
        self.slow = False
        self.looks_from_the_database = 0

    def monotonic(self) -> float:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # not the event loop's thread: a database connection's
            self.looks_from_the_database += 1
            if self.slow:
                self._mono += self.step  # time only: no alarm is rung from another thread
        return super().monotonic()

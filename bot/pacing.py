"""Discord's global rate limit, shared by the deliver processes.

Discord allows a bot token a number of requests per second in all (the global limit, 50 unless Discord raised
it), whichever process makes them. discord.py paces each route from Discord's headers, but learns of the global
limit only from a 429, which stops every request of that process until the second is over; deliver processes that
each went as fast as they could hit it again and again (bench/bench_delivery_pg.py: 20-106 times a run of 500
posts), and every such 429 counts towards Discord's limit of invalid requests (10,000 in 10 minutes, past which
Cloudflare blocks the bot for a while). So every request waits for its turn: at most `limit` in each window of a little over a second (`Turns`). On
PostgreSQL the turns are the store's, one row every deliver process takes its turns from (`take_turn`), so the
processes share the limit by what they actually send: one waiting on a channel's own limit, finished or killed
leaves its part to the others at once. A SQLite file is one machine's, with one deliver process: it keeps its
turns itself, as it does while the database cannot be reached.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from bot.clock import Clock

log = logging.getLogger(__name__)

GLOBAL_PER_SECOND = 50  # Discord's global limit per bot token, unless it raised the bot's
# Discord counts a second; a window a little longer leaves room for the time from a turn to the request's arrival,
# which varies (a busy event loop), so that one window's requests never land in the next of Discord's seconds.
WINDOW_SECONDS = 1.05

# The store's turns (DeliveryRepository.take_turn): (now, limit, window) -> when to go, None when not shared.
SharedTurns = Callable[[datetime, int, float], Awaitable[datetime | None]]


class Turns:
    """Turns in windows, as Discord counts: up to `limit` in a window of `window` seconds, which starts with its
    first turn. A window over starts again with the next request; a full one passes its turns to the window after
    it, which starts when it ends. So a backlog goes `limit` at a time, each window as soon as the last ends (the
    store's `take_turn` does the same on its row, for every process)."""

    def __init__(self) -> None:
        self.start = float("-inf")
        self.given = 0

    def take(self, now: float, limit: int, window: float) -> float:
        """The time (on `now`'s clock) the next request may go."""
        if now >= self.start + window:
            self.start, self.given = now, 1
        elif self.given >= limit:
            self.start, self.given = self.start + window, 1
        else:
            self.given += 1
        return max(self.start, now)


class GlobalPacer:
    """Gives this process's requests their turns under the global limit, in the order asked: from the store's
    turns, shared with every process (`share`), else from its own."""

    def __init__(
        self, clock: Clock, *, limit: int = GLOBAL_PER_SECOND, window: float = WINDOW_SECONDS
    ) -> None:
        self.clock = clock
        self.limit = limit
        self.window = window
        self._shared: SharedTurns | None = None
        self._own = Turns()
        self._warned = False

    def share(self, turns: SharedTurns) -> None:
        """Take turns from `turns` (the store's, shared with the other deliver processes)."""
        self._shared = turns

    async def acquire(self) -> None:
        """Wait for this request's turn under the global limit."""
        if self._shared is not None:
            try:
                turn = await self._shared(self.clock.now(), self.limit, self.window)
            except Exception as exc:  # the database away: the delivery says so; pace alone meanwhile
                if not self._warned:
                    log.warning(
                        "could not take a turn from the database (%s): pacing this process alone", exc
                    )
                    self._warned = True
            else:
                self._warned = False
                if turn is not None:
                    await self._until((turn - self.clock.now()).total_seconds())
                    return
                self._shared = None  # the store serves this process only: its turns are its own
        now = self.clock.monotonic()
        await self._until(self._own.take(now, self.limit, self.window) - now)

    async def _until(self, wait: float) -> None:
        if wait > 0:
            await self.clock.sleep(wait)

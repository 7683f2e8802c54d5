"""Background work on APScheduler's AsyncIOScheduler: poll arXiv every POLL_INTERVAL_MINUTES, with jitter."""

from __future__ import annotations

import asyncio
import logging

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.context import AppContext

log = logging.getLogger(__name__)


class Scheduler:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self._scheduler = AsyncIOScheduler(timezone="UTC")
        self._poll_lock = asyncio.Lock()

    def start(self) -> None:
        minutes = self.ctx.settings.poll_interval_minutes
        self._scheduler.add_job(
            self.poll,
            IntervalTrigger(minutes=minutes, jitter=min(300, minutes * 6)),
            id="poll",
            next_run_time=self.ctx.clock.now(),  # poll at start, then on the interval
            max_instances=1,
            coalesce=True,
        )
        self._scheduler.start()

    async def poll(self) -> None:
        if self._poll_lock.locked():
            return
        async with self._poll_lock:
            report = await self.ctx.ingestor().poll_once()
            log.info("%s", report.summary())

    async def stop(self) -> None:
        """Stop scheduling; a cycle in flight finishes its current page (each page commits on its own)."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        async with self._poll_lock:
            pass

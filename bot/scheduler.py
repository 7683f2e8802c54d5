"""Background work on APScheduler's AsyncIOScheduler: poll arXiv every POLL_INTERVAL_MINUTES (with jitter): the
API, then the RSS announcement feed; deliver after each poll and on a short interval, post digests at the top
of every hour, retrain the learned topic scorer daily (and soon after start when it has no model yet)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.config import require_contact
from bot.context import AppContext
from bot.delivery import DeliveryWorker
from bot.errors import ConfigError

log = logging.getLogger(__name__)
RETRAIN_HOUR = 4  # UTC, after the night's announcements are stored


class Scheduler:
    def __init__(self, ctx: AppContext, worker: DeliveryWorker) -> None:
        self.ctx = ctx
        self.worker = worker
        self._scheduler = AsyncIOScheduler(timezone="UTC")
        # Polls and posts run side by side (a poll retrying a slow arXiv must not hold posts back); each kind
        # runs one at a time.
        self._polling = asyncio.Lock()
        self._posting = asyncio.Lock()
        self._recovered = False

    def start(self) -> None:
        settings = self.ctx.settings
        minutes = settings.poll_interval_minutes
        common = {"max_instances": 1, "coalesce": True, "misfire_grace_time": 300}
        self._scheduler.add_job(
            self.poll,
            IntervalTrigger(minutes=minutes, jitter=min(300, minutes * 6)),
            id="poll",
            next_run_time=self.ctx.clock.now(),
            **common,
        )
        self._scheduler.add_job(
            self.deliver, IntervalTrigger(seconds=settings.deliver_interval_seconds), id="deliver", **common
        )
        # digest_hour is an hour of UTC: the top of a UTC hour, not of the host's (UTC+5:30 would post at :30).
        self._scheduler.add_job(self.digests, CronTrigger(minute=0, timezone="UTC"), id="digests", **common)
        # The learned scorer learns from the history as it grows: daily, and at once when there is no model yet.
        scorer = self.ctx.services.topics.scorer
        soon = {"next_run_time": self.ctx.clock.now() + timedelta(minutes=5)}  # (None would pause the job)
        self._scheduler.add_job(
            self.retrain,
            CronTrigger(hour=RETRAIN_HOUR, minute=30, timezone="UTC"),
            id="retrain",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=6 * 3600,
            **(soon if scorer is not None and scorer.needs_training else {}),
        )
        self._scheduler.start()

    async def poll(self) -> None:
        async with self._polling:
            ingestor = self.ctx.ingestor()
            try:
                require_contact(self.ctx.settings)
            except ConfigError as exc:
                # Refused before any request; recorded as the source's error, so /status shows it too.
                log.error("poll not run: %s", exc)
                await ingestor.refuse(str(exc))
                return
            report = await ingestor.poll_once()
            retry = "" if report.complete else f"; next poll in {self.ctx.settings.poll_interval_minutes} min"
            log.info("%s%s", report.summary(), retry)
            # Whatever the API did: the feed is the backstop when the API fails or misses a paper.
            announcements = self.ctx.announcements()
            if announcements is not None:
                log.info("%s", (await announcements.run_once()).summary())
        await self.deliver()

    async def deliver(self) -> None:
        async with self._posting:
            if not self._recovered:
                recovered = await self.worker.recover_in_flight()
                self._recovered = True
                if recovered:
                    log.info("checked %d posts that were in flight at the last stop", recovered)
            report = await self.worker.deliver_once()
            if report.sent or report.retried or report.failed:
                log.info("delivery: %s", report)

    async def retrain(self) -> None:
        """Train every topic's scorer on the history (in a worker thread) and renew their suggestions."""
        held = await self.ctx.services.topics.retrain()
        log.info("scorer retrained: %d topics hold suggestions", sum(1 for n in held.values() if n))

    async def digests(self) -> None:
        async with self._posting:
            await self.worker.deliver_digests(self.ctx.clock.now().hour)

    async def stop(self) -> None:
        """Stop scheduling; the post in flight finishes, everything else stays queued for the next start. A poll
        in progress is cancelled: its current page's transaction rolls back, and the next start walks it again."""
        self.worker.stopping = True
        if not self._scheduler.running:
            return
        self._scheduler.pause()  # no new runs; shutting down now would cancel a post mid-flight
        async with self._posting:
            self._scheduler.shutdown(wait=False)

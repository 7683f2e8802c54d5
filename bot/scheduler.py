"""Background work on APScheduler's AsyncIOScheduler, by the process's roles (ROLES):
- poll: arXiv every POLL_INTERVAL_MINUTES (with jitter), the API then the RSS announcement feed, and the learned
  topic scorer's retraining daily (and soon after start when it has no model yet). One process of a deployment
  polls at a time: the poll lock (the store's `process_lock("poll")`) is waited for, and taken over when its holder
  dies; a poller checks it still holds the lock before each poll (a database restart ends the session holding it).
- deliver: the outbox on a short interval (and after each poll of this process), digests at the top of every hour.
- every role: every few minutes (and before each poll), the learned scorer's model another process trained.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.config import require_contact
from bot.context import AppContext
from bot.delivery import DeliveryWorker
from bot.errors import ConfigError, Unreachable

log = logging.getLogger(__name__)
RETRAIN_HOUR = 4  # UTC, after the night's announcements are stored
LOCK_RETRY_SECONDS = 5.0  # how often a waiting poller asks for the poll lock
MODEL_CHECK_MINUTES = 5  # how often a process looks for a scorer model another process trained
WAITING = "another poller holds the lock; waiting"


class Scheduler:
    def __init__(self, ctx: AppContext, worker: DeliveryWorker | None, *, poll: bool = True) -> None:
        """`worker` (None: this process delivers nothing) posts the outbox; `poll`: this process polls."""
        self.ctx = ctx
        self.worker = worker
        self.polls = poll
        self._scheduler = AsyncIOScheduler(timezone="UTC")
        # Polls and posts run side by side (a poll retrying a slow arXiv must not hold posts back); each kind
        # runs one at a time.
        self._polling = asyncio.Lock()
        self._posting = asyncio.Lock()
        self._recovered = False
        self._lock = ctx.process_lock("poll") if poll else None
        self._waiting = False  # another process holds the poll lock (logged once)
        self._common = {"max_instances": 1, "coalesce": True, "misfire_grace_time": 300}

    def start(self) -> None:
        settings = self.ctx.settings
        if self.polls:
            minutes = settings.poll_interval_minutes
            self._scheduler.add_job(
                self.poll,
                IntervalTrigger(minutes=minutes, jitter=min(300, minutes * 6)),
                id="poll",
                next_run_time=self.ctx.clock.now(),
                **self._common,
            )
            # The learned scorer learns from the history as it grows: daily, and at once when there is no model.
            scorer = self.ctx.services.topics.scorer
            soon = {
                "next_run_time": self.ctx.clock.now() + timedelta(minutes=5)
            }  # (None would pause the job)
            self._scheduler.add_job(
                self.retrain,
                CronTrigger(hour=RETRAIN_HOUR, minute=30, timezone="UTC"),
                id="retrain",
                max_instances=1,
                coalesce=True,
                misfire_grace_time=6 * 3600,
                **(soon if scorer is not None and scorer.needs_training else {}),
            )
            # The lock is checked every few seconds: a waiting poller takes over within seconds of the holder's
            # death, and a holder whose session ended with a database restart takes the lock again.
            self._scheduler.add_job(
                self.watch_lock, IntervalTrigger(seconds=LOCK_RETRY_SECONDS), id="poll lock", **self._common
            )
        if self.ctx.services.topics.scorer is not None:
            self._scheduler.add_job(
                self.catch_up_model,
                IntervalTrigger(minutes=MODEL_CHECK_MINUTES),
                id="scorer model",
                **self._common,
            )
        if self.worker is not None:
            self._scheduler.add_job(
                self.deliver,
                IntervalTrigger(seconds=settings.deliver_interval_seconds),
                id="deliver",
                **self._common,
            )
            # digest_hour is an hour of UTC: the top of a UTC hour, not of the host's (UTC+5:30 would post at :30).
            self._scheduler.add_job(
                self.digests, CronTrigger(minute=0, timezone="UTC"), id="digests", **self._common
            )
        self._scheduler.start()

    async def _leading(self) -> bool:
        """Whether this process holds the poll lock (taken now if free; logged when that changes)."""
        if self._lock is None or await self._lock.try_acquire():
            if self._waiting:
                log.info("took the poll lock: this process polls now")
                self._waiting = False
            return True
        if not self._waiting:
            log.info(WAITING)
            self._waiting = True
        return False

    async def watch_lock(self) -> None:
        """Every few seconds: a poller that just took the lock polls at once rather than at its next interval."""
        waited = self._waiting
        if await self._leading() and waited:
            with contextlib.suppress(JobLookupError):  # (a test calling the job itself registers none)
                self._scheduler.modify_job("poll", next_run_time=self.ctx.clock.now())

    async def poll(self) -> None:
        async with self._database_away("poll"):
            await self._poll()
        if self.worker is not None:
            await self.deliver()

    @contextlib.asynccontextmanager
    async def _database_away(self, job: str) -> AsyncIterator[None]:
        """The database went away (restarting): one line, and the job runs again at its next round; the
        store kept nothing half-done (transactions roll back; a post left 'sending' is checked later)."""
        try:
            yield
        except Unreachable as exc:
            log.warning("%s not finished: %s", job, exc)

    async def _poll(self) -> None:
        async with self._polling:
            if not await self._leading():
                return
            ingestor = self.ctx.ingestor()
            try:
                require_contact(self.ctx.settings)
            except ConfigError as exc:
                # Refused before any request; recorded as the source's error, so /status shows it too.
                log.error("poll not run: %s", exc)
                await ingestor.refuse(str(exc))
                return
            await self.catch_up_model()  # new papers are scored with the deployment's newest model
            report = await ingestor.poll_once()
            retry = "" if report.complete else f"; next poll in {self.ctx.settings.poll_interval_minutes} min"
            log.info("%s%s", report.summary(), retry)
            # Whatever the API did: the feed is the backstop when the API fails or misses a paper.
            announcements = self.ctx.announcements()
            if announcements is not None:
                log.info("%s", (await announcements.run_once()).summary())

    async def deliver(self) -> None:
        if self.worker is None:
            return
        async with self._posting, self._database_away("delivery"):
            if not self._recovered:
                recovered = await self.worker.recover_in_flight()
                self._recovered = True
                if recovered:
                    log.info("checked %d posts that were in flight at the last stop", recovered)
            report = await self.worker.deliver()  # until no channel has posts due, see DeliveryWorker.deliver
            if report.sent or report.retried or report.failed:
                log.info("delivery: %s", report)

    async def retrain(self) -> None:
        """Train every topic's scorer on the history (in a worker thread) and renew their suggestions."""
        if self._lock is not None and not await self._lock.try_acquire():
            return  # the poller that holds the lock retrains
        async with self._database_away("retraining"):
            held = await self.ctx.services.topics.retrain()
            log.info("scorer retrained: %d topics hold suggestions", sum(1 for n in held.values() if n))

    async def catch_up_model(self) -> None:
        """Use the scorer model another process of the deployment trained since this one read its own."""
        scorer = self.ctx.services.topics.scorer
        if scorer is not None:
            async with self._database_away("scorer model check"):
                await scorer.catch_up()

    async def digests(self) -> None:
        if self.worker is None:
            return
        async with self._posting, self._database_away("digests"):
            await self.worker.deliver_digests(self.ctx.clock.now().hour)

    async def stop(self) -> None:
        """Stop scheduling; the post in flight finishes, everything else stays queued for the next start. A poll
        in progress is cancelled: its current page's transaction rolls back, and the next start walks it again."""
        if self.worker is not None:
            self.worker.stopping = True
        if self._scheduler.running:
            self._scheduler.pause()  # no new runs; shutting down now would cancel a post mid-flight
            async with self._posting:
                self._scheduler.shutdown(wait=False)
        if self._lock is not None:
            await self._lock.release()

"""What `python -m bot` (run) starts, by ROLES: with `gateway` the Discord bot with its gateway connection; with
`deliver` but no `gateway`, the bot logged in to Discord's REST API only (posting needs no gateway); with `poll`
alone, no Discord at all. Several processes with their roles share one database: see README "Running at scale"."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from bot.clock import Clock
from bot.config import Settings, require_token
from bot.context import open_context
from bot.scheduler import Scheduler

log = logging.getLogger(__name__)


def run_roles(settings: Settings, clock: Clock | None = None) -> int:
    """Run this process's roles until SIGINT or SIGTERM."""
    if {"gateway", "deliver"} & set(settings.roles):
        token = require_token(settings)
        from bot.app import run_bot  # imported late: a poller needs no Discord

        return run_bot(settings, token)
    return asyncio.run(run_poller(settings, clock))


async def run_poller(settings: Settings, clock: Clock | None = None) -> int:
    """The poll role alone: poll arXiv on schedule while this process holds the poll lock, match the history of
    new catalog topics; the outbox rows it writes are posted by the deliver processes."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with open_context(settings, clock, history_in_background=True) as ctx:
        log.info("database %s; roles poll", settings.database_shown)
        scheduler = Scheduler(ctx, None, poll=True)
        scheduler.start()
        history = asyncio.create_task(ctx.match_history(), name="catalog history")
        try:
            await stop.wait()
        finally:
            history.cancel()  # resumed at the next start: the queue is in the store
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await history
            await scheduler.stop()
    return 0

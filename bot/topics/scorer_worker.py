"""The child process that does the learned scorer's CPU work (bot/topics/scorer_jobs.py).

Training imports scikit-learn (~100 MiB) and peaks at hundreds of MiB over a million papers' feature rows:
in the bot's own process, that memory would stay with it for good. So it runs in a process of its own, started
with "spawn" (a fresh interpreter: nothing of the bot's state is copied, and the child never holds the bot's
Discord or database connections), one at a time, created when a job comes and ended `idle_seconds` after the
work that asked for it is done (`session`): between trainings no child is left running. The bot's scorers share
one worker (`shared_worker`), so that work coming close together (a training, then a topic's retraining) pays
for one start of the child (1-3 s: it imports NumPy, SciPy and scikit-learn).

A child that dies (killed, out of memory) fails its job with `ScorerProcessDied`; the next job starts a new
child.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from functools import partial
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class ScorerProcessDied(RuntimeError):
    """The scorer's child process ended before its job did (killed, out of memory)."""


class ScorerWorker:
    """At most one child process, shared by the jobs of one piece of work and of work that follows within
    `idle_seconds`."""

    def __init__(self, idle_seconds: float = 0.0) -> None:
        self.idle_seconds = idle_seconds
        self._executor: ProcessPoolExecutor | None = None
        self._sessions = 0
        self._guard = threading.Lock()  # the idle timer runs in a thread of its own
        self._timer: threading.Timer | None = None

    @property
    def running(self) -> bool:
        """Whether a child process is kept now (between pieces of work it is not)."""
        return self._executor is not None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """Jobs run within share one child; it ends when the outermost session does."""
        with self._guard:
            self._sessions += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        try:
            yield
        finally:
            ending = None
            with self._guard:
                self._sessions -= 1
                if self._sessions == 0 and self._executor is not None:
                    if self.idle_seconds > 0:
                        self._timer = threading.Timer(self.idle_seconds, self._expire)
                        self._timer.daemon = True
                        self._timer.start()
                    else:
                        ending, self._executor = self._executor, None
            if ending is not None:
                await asyncio.to_thread(ending.shutdown, wait=True, cancel_futures=True)

    async def run(self, job: Callable[..., T], *args: object, **kwargs: object) -> T:
        """`job(*args, **kwargs)` in the child process (started if there is none); its exceptions are raised
        here, and the child's death is `ScorerProcessDied`."""
        async with self.session():
            with self._guard:
                if self._executor is None:
                    self._executor = ProcessPoolExecutor(
                        max_workers=1, mp_context=multiprocessing.get_context("spawn")
                    )
                executor = self._executor
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(executor, partial(job, *args, **kwargs))
            except BrokenProcessPool as exc:
                with self._guard:
                    if self._executor is executor:
                        self._executor = None  # the next job starts another child
                await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
                name = getattr(job, "__name__", "a job")
                raise ScorerProcessDied(f"the scorer's process ended during {name}") from exc

    async def close(self) -> None:
        """End the child now if no work is running (a clean stop; a benchmark reading the child's peak)."""
        with self._guard:
            if self._sessions or self._executor is None:
                return
            ending, self._executor = self._executor, None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        await asyncio.to_thread(ending.shutdown, wait=True, cancel_futures=True)

    def _expire(self) -> None:
        """The idle timer: no work came since the last ended, so the child ends."""
        with self._guard:
            if self._sessions or self._executor is None:
                return
            ending, self._executor, self._timer = self._executor, None, None
        ending.shutdown(wait=True, cancel_futures=True)


IDLE_SECONDS = 30.0
shared_worker = ScorerWorker(IDLE_SECONDS)  # the default of every LearnedScorer in a process
# Scoring new papers runs in a child of its own: a poll's page never waits behind a training (a minute at 1M
# papers), and the bot's process holds no weights. Between polls no child is left running.
scoring_worker = ScorerWorker(IDLE_SECONDS)

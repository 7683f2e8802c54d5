"""Load run: a backfill of a generated corpus with hostile entries, then posts to 50 channels through the real
discord.py client, against the loopback Discord enforcing 5 messages per 5 s per channel and 50 requests per
second overall. Measures the longest stall of the bot's event loop in each phase (goal: under 100 ms).

    python bench/bench_load.py [--channels 50] [--papers 10] [--corpus 6000] [--authors 200000]

Checks that every post arrives exactly once, reports the delivery time against the least those limits allow,
and where the event loop stalled longest. The loopback servers run on a thread and event loop of their own,
so the stalls measured are the bot's, not the fakes'. Hostile entries (bench/corpus.py): a 50k-character
author name, 200,000 authors, long affiliations, a 100k-character abstract and a 25k-character title of
LaTeX that used to cost quadratic time, forged links, 5,000 categories; they are in the history the
backfill stores and among the new papers that are posted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import math
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import Corpus, hostile_papers, titled_papers  # noqa: E402
from bot.clock import FakeClock  # noqa: E402
from bot.loopback.arxiv import LoopbackArxiv  # noqa: E402
from bot.loopback.discord import LoopbackDiscord  # noqa: E402
from bot.loopback.harness import running_paperbot  # noqa: E402
from bot.models import Paper  # noqa: E402

PER_CHANNEL = (5, 5.0)
GLOBAL_PER_SECOND = 50
STALL_GOAL_MS = 100
T = TypeVar("T")


class Fakes:
    """The loopback servers on their own thread and event loop: their CPU work (building Atom pages,
    validating every request against Discord's OpenAPI file) must not count as the bot's stalls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fakes", daemon=True)
        self.thread.start()

    async def run(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a coroutine on the fakes' loop (anything that touches their state goes through here)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work(), self.loop))

    async def call(self, fn: Callable[[], T]) -> T:
        async def wrapped() -> T:
            return fn()

        return await self.run(wrapped)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


@dataclass
class Stall:
    wall: float = 0.0  # how late the heartbeat woke
    cpu: float = 0.0  # CPU time the loop's own thread spent in that gap: work done on the event loop
    where: str = ""


class LoopStalls:
    """The longest stalls of the running event loop per phase: a heartbeat every 5 ms measures how late it
    wakes (wall) and how much CPU the loop thread itself used meanwhile (cpu: callbacks that did not yield;
    the rest of a wall stall is waiting for the GIL or for a core, on a shared machine mostly the latter).
    A watchdog thread samples where the loop thread is while a beat is overdue."""

    def __init__(self, interval: float = 0.005, sample_after: float = 0.02) -> None:
        self.interval = interval
        self.sample_after = sample_after
        self.phase = "start"
        self.by_wall: dict[str, Stall] = {}
        self.by_cpu: dict[str, Stall] = {}
        self._lock = threading.Lock()
        self._last_beat = time.perf_counter()
        self._samples: collections.Counter[str] = collections.Counter()
        self._loop_thread = threading.get_ident()
        self._stop = threading.Event()

    async def __aenter__(self) -> LoopStalls:
        self._loop_thread = threading.get_ident()
        self._beats = asyncio.create_task(self._beat())
        self._watchdog = threading.Thread(target=self._watch, name="stall-watchdog", daemon=True)
        self._watchdog.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        self._stop.set()
        self._beats.cancel()
        self._watchdog.join()

    async def _beat(self) -> None:
        while True:
            before, cpu_before = time.perf_counter(), time.thread_time()
            await asyncio.sleep(self.interval)
            now, cpu_now = time.perf_counter(), time.thread_time()
            with self._lock:
                samples, self._samples = self._samples, collections.Counter()
                self._last_beat = now
            stall = Stall(max(now - before - self.interval, 0.0), cpu_now - cpu_before)
            stall.where = samples.most_common(1)[0][0] if samples else ""
            if stall.wall > self.by_wall.get(self.phase, Stall()).wall:
                self.by_wall[self.phase] = stall
            if stall.cpu > self.by_cpu.get(self.phase, Stall()).cpu:
                self.by_cpu[self.phase] = stall

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            with self._lock:
                if time.perf_counter() - self._last_beat < self.sample_after:
                    continue
                frame = sys._current_frames().get(self._loop_thread)
                if frame is not None:
                    self._samples[_where(frame)] += 1


def _where(frame: FrameType | None) -> str:
    """The innermost line of paperwatch's own code on the stack, and the innermost call of all."""
    innermost = f"{frame.f_code.co_name}" if frame else "?"
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(ROOT) and path.parts[len(ROOT.parts)] in ("bot", "cogs"):
            return f"{path.relative_to(ROOT)}:{frame.f_lineno} {frame.f_code.co_name} → {innermost}"
        frame = frame.f_back
    return innermost


async def timed(stalls: LoopStalls, phase: str, work: Awaitable[T]) -> tuple[T, float]:
    stalls.phase = phase
    began = time.perf_counter()
    result = await work
    return result, time.perf_counter() - began


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--papers", type=int, default=10, help="ordinary matching papers posted per channel")
    parser.add_argument("--corpus", type=int, default=6000, help="generated papers in the backfilled history")
    parser.add_argument("--days", type=int, default=7, help="days of history to backfill")
    parser.add_argument(
        "--authors",
        type=int,
        default=200_000,
        help="authors of the largest hostile entry (a million make a 115 MB page, over the client's 64 MB bound)",
    )
    parser.add_argument("--no-hostile", action="store_true", help="leave the hostile entries out")
    args = parser.parse_args()

    clock = FakeClock()
    history = list(
        Corpus().papers(args.corpus, end=clock.now() - timedelta(hours=2), span=timedelta(days=args.days))
    )
    if not args.no_hostile:
        history += hostile_papers(end=clock.now() - timedelta(hours=3), start=90000, authors=args.authors)
    titles = [f"GRPO post-training of language models for reasoning, study {i}" for i in range(args.papers)]
    announced = clock.now() + timedelta(hours=1)
    new: list[Paper] = titled_papers(titles, end=announced, start=10000)
    if not args.no_hostile:
        new += hostile_papers(end=announced - timedelta(minutes=30), start=95000, authors=args.authors)
    per_channel = len(new)

    fakes = Fakes()
    discord = await fakes.run(lambda: LoopbackDiscord(timeout=600).__aenter__())
    arxiv = await fakes.run(lambda: LoopbackArxiv(history).__aenter__())
    try:
        guild = await fakes.call(lambda: discord.add_guild("Load"))
        channels = [
            await fakes.call(lambda i=i: discord.add_text_channel(guild, f"papers-{i}"))
            for i in range(args.channels)
        ]
        with tempfile.TemporaryDirectory() as tmp:
            async with running_paperbot(
                Path(tmp), discord, arxiv, clock=clock, posts_per_channel_per_cycle=max(10, per_channel)
            ) as bot:
                for channel in channels:
                    plan = await bot.services.follows.plan(
                        guild.id, channel.id, "RL Post-Training", mode="each"
                    )
                    await bot.services.follows.follow(plan)
                async with LoopStalls() as stalls:
                    stored, backfill_s = await timed(stalls, "backfill", bot.ctx.backfill().run(args.days))
                    _, first_poll_s = await timed(
                        stalls, "backfill", bot.ctx.ingestor().poll_once()
                    )  # history
                    backfill_s += first_poll_s
                    clock.advance(2 * 3600)
                    await fakes.call(lambda: arxiv.papers.extend(new))
                    polled, poll_s = await timed(stalls, "poll", bot.ctx.ingestor().poll_once())
                    await fakes.call(
                        lambda: discord.set_rate_limit(
                            per_channel=PER_CHANNEL, global_per_second=GLOBAL_PER_SECOND
                        )
                    )
                    report, deliver_s = await timed(stalls, "deliver", bot.worker.deliver_once())
            messages = await fakes.call(lambda: {c.id: discord.messages(c.id) for c in channels})
            rejected = await fakes.call(lambda: sum(1 for r in discord.requests if r.status == 429))
            violations = await fakes.call(lambda: len(discord.violations))
    finally:
        await fakes.run(lambda: arxiv.__aexit__(None, None, None))
        await fakes.run(lambda: discord.__aexit__(None, None, None))
        fakes.stop()

    total = args.channels * per_channel
    wanted = sorted(p.abs_url for p in new)
    urls = {c: sorted(e["url"] for m in ms for e in m["embeds"]) for c, ms in messages.items()}
    exactly_once = all(u == wanted for u in urls.values()) and report.sent == total
    limit, window = PER_CHANNEL
    floor = max(
        (math.ceil(per_channel / limit) - 1) * window, (math.ceil(total / GLOBAL_PER_SECOND) - 1) * 1.0
    )
    longest = max(s.cpu for s in stalls.by_cpu.values())
    print(
        "| posts | channels | delivered exactly once | 429s met | total (s) | least the limits allow (s) | ratio "
        "| longest event-loop stall (ms) |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    print(
        f"| {total} | {args.channels} | {'yes' if exactly_once else 'NO'} | {rejected} | {deliver_s:.1f} | "
        f"{floor:.0f} | {deliver_s / max(floor, 1e-9):.2f}x | {longest * 1000:.0f} |"
    )
    print()
    print(
        "| phase | what it did | took (s) | longest stall: work on the loop (ms) | where | "
        "longest stall, wall clock (ms) | where | goal: work on the loop |"
    )
    print("|---|---|---:|---:|---|---:|---|---|")
    hostile = "" if args.no_hostile else f" + {len(new) - args.papers} hostile"
    rows = [
        (
            "backfill",
            f"{args.days} days, {stored} papers stored ({args.corpus} generated{hostile}), first poll",
            backfill_s,
        ),
        ("poll", f"{len(polled.new)} new papers stored and matched, {total} posts queued", poll_s),
        ("deliver", f"{report.sent} posts to {args.channels} channels under rate limits", deliver_s),
    ]
    for phase, what, took in rows:
        cpu, wall = stalls.by_cpu.get(phase, Stall()), stalls.by_wall.get(phase, Stall())
        verdict = "met" if cpu.cpu * 1000 < STALL_GOAL_MS else "MISSED"
        print(
            f"| {phase} | {what} | {took:.1f} | {cpu.cpu * 1000:.0f} | `{cpu.where or '-'}` | {wall.wall * 1000:.0f} "
            f"(loop's own work {wall.cpu * 1000:.0f}) | `{wall.where or '-'}` | < {STALL_GOAL_MS} ms: {verdict} |"
        )
    if violations:
        print(f"\n{violations} requests broke Discord's rules")


if __name__ == "__main__":
    asyncio.run(main())

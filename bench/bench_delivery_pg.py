"""Delivery across processes on PostgreSQL: 500 posts to 50 channels by 1, 2 and 4 `python -m bot` processes with
ROLES=deliver sharing one outbox, against the loopback Discord enforcing 5 messages per 5 s per channel and 50
requests per second overall; then 4 processes with one killed (SIGKILL) mid-batch while it holds channels.

    python bench/bench_delivery_pg.py [--database-url postgresql://user@127.0.0.1:5432/postgres] [--lease 5]

Without --database-url it starts a throwaway PostgreSQL cluster (as the tests do: 127.0.0.1, a temporary folder)
and stops it after. The URL names a server where the user may create databases: each run gets a fresh one
(bench_delivery_<n>). It reports, for each run, the time from the first post to the last against the least those limits allow (goal:
<= 1.2x), and whether every (channel, paper) arrived exactly once. The channels are followed as /follow records
them (a text channel's kind known: no GET /channels/{id} before a post). The killed worker's channels (its share:
a worker holds at most the channels with posts due over the workers in a round) are taken over at a running
worker's next claim, within a second: its liveness advisory lock went with its session, so they do not wait for
their lease (--lease seconds) to run out. With --timeline it also prints each second's posts and the channels whose
last post came after the goal (1.2x the floor). `--runs kill` runs only the
last; `--repeat N` runs each N times. Each row also counts the 429s the workers' discord.py clients logged: the
global limit's (the token's 50 requests/s, shared by every process) and the channels' own.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import titled_papers  # noqa: E402
from bot.loopback.discord import LoopbackDiscord  # noqa: E402
from tests.e2e.bot_processes import deliver_env, fill_outbox  # noqa: E402
from tests.store.postgres_cluster import start_cluster  # noqa: E402

PER_CHANNEL = (5, 5.0)
GLOBAL_PER_SECOND = 50
GOAL = 1.2


def database_url(server: str, name: str) -> str:
    parts = urlsplit(server)
    return urlunsplit(parts._replace(path=f"/{name}"))


async def fresh_database(server: str, name: str) -> str:
    conn = await asyncpg.connect(server)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return database_url(server, name)


def worker_env(discord: LoopbackDiscord, url: str, lease: int, folder: Path) -> dict[str, str]:
    """A deliver process's settings, as the e2e tests give them (tests/e2e/bot_processes.deliver_env), with the
    bench's lease, quieter logs and a data folder of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "DATABASE_", "PAPERWATCH_"))}
    env.update(deliver_env(discord, url))
    env.update(
        {
            "DELIVERY_LEASE_SECONDS": str(lease),
            "LOG_LEVEL": "WARNING",  # discord.py's 429 warnings included: counted in the row
            "XDG_DATA_HOME": str(folder),
            "PYTHONPATH": str(ROOT),
        }
    )
    return env


def timeline(times: list[datetime]) -> str:
    """Posts in each second from the first."""
    first = min(times)
    per_second = Counter(int((t - first).total_seconds()) for t in times)
    return " ".join(str(per_second[s]) for s in range(max(per_second) + 1))


def late_channels(discord: LoopbackDiscord, channels: list[int], first: datetime, floor: float) -> str:
    """The channels whose last post came after the goal (GOAL x the floor): each post's second from the first post
    of the run."""
    late = []
    for channel in channels:
        times = sorted(
            (datetime.fromisoformat(m["timestamp"]) - first).total_seconds()
            for m in discord.messages(channel)
        )
        if times and times[-1] > floor * GOAL:
            late.append(f"#{channels.index(channel)}: " + " ".join(f"{t:.1f}" for t in times))
    return "late channels (posts at s): " + ("; ".join(late) or "none")


def rate_limited(logs: list[Path]) -> tuple[int, int]:
    """(global, per channel) 429s the workers' discord.py clients logged."""
    text = "".join(log.read_text(errors="replace") for log in logs)
    hit = text.count("responded with 429")
    global_ = text.count("Global rate limit has been hit")
    return global_, hit - global_


async def run(server: str, workers: int, kill: bool, args: argparse.Namespace, folder: Path, n: int) -> str:
    url = await fresh_database(server, f"bench_delivery_{workers}{'_kill' if kill else ''}")
    logs = [folder / f"worker-{workers}{'-kill' if kill else ''}-{n}-{i}.log" for i in range(workers)]
    async with LoopbackDiscord(timeout=600) as discord:
        guild = discord.add_guild("Bench")
        channels = [discord.add_text_channel(guild, f"papers-{i}").id for i in range(args.channels)]
        titles = [
            f"GRPO post-training of language models for reasoning, study {i}" for i in range(args.papers)
        ]
        papers = titled_papers(titles, end=datetime.now(UTC) - timedelta(hours=1), start=10000)
        await fill_outbox(url, channels, guild.id, papers)
        discord.set_rate_limit(per_channel=PER_CHANNEL, global_per_second=GLOBAL_PER_SECOND)
        total = len(channels) * len(papers)
        posted = lambda: sum(len(discord.messages(c)) for c in channels)  # noqa: E731
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                env=worker_env(discord, url, args.lease, folder),
                cwd=folder,
                stdout=logs[i].open("ab"),
                stderr=asyncio.subprocess.STDOUT,
            )
            for i in range(workers)
        ]
        killed = ""
        try:
            await discord.wait_for(lambda: posted() >= 1, timeout=120)
            first = time.monotonic()
            if kill:
                await discord.wait_for(lambda: posted() >= total // 5, timeout=120)
                victim = await holder(url, procs)
                victim.send_signal(signal.SIGKILL)
                await victim.wait()
                killed = f", one killed at {posted()} posts ({time.monotonic() - first:.1f} s)"
            await discord.wait_for(lambda: posted() >= total, timeout=600)
            elapsed = time.monotonic() - first
            await wait_all_sent(url, total)
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
            await asyncio.gather(*(proc.wait() for proc in procs))
        discord_times = [
            datetime.fromisoformat(m["timestamp"]) for c in channels for m in discord.messages(c)
        ]
        wanted = Counter(p.abs_url for p in papers)
        once = all(
            Counter(e["url"] for m in discord.messages(c) for e in m.get("embeds") or []) == wanted
            for c in channels
        )
    limit, window = PER_CHANNEL
    floor = max(
        (math.ceil(len(papers) / limit) - 1) * window, (math.ceil(total / GLOBAL_PER_SECOND) - 1) * 1.0
    )
    ratio = elapsed / floor
    verdict = "met" if ratio <= GOAL else "not met"
    global_429, channel_429 = rate_limited(logs)
    if args.timeline:
        print(f"posts per second, {workers} processes{killed}:", timeline(discord_times), flush=True)
        print(late_channels(discord, channels, min(discord_times), floor), flush=True)
    return (
        f"| {workers}{killed} | {total} | {len(channels)} | {'yes' if once else 'NO'} | {elapsed:.1f} | {floor:.0f} | "
        f"**{ratio:.2f}x** ({verdict}) | {global_429} / {channel_429} | {os.getloadavg()[0]:.1f} |"
    )


async def holder(url: str, procs: list[asyncio.subprocess.Process]) -> asyncio.subprocess.Process:
    """A worker process holding channel leases now (the worker id names its pid)."""
    conn = await asyncpg.connect(url)
    try:
        for _ in range(200):
            rows = await conn.fetch("SELECT claimed_by FROM delivery_leases WHERE claimed_by <> ''")
            pids = {int(r[0].split(":")[1]) for r in rows}
            for proc in procs:
                if proc.pid in pids:
                    return proc
            await asyncio.sleep(0.05)
    finally:
        await conn.close()
    raise RuntimeError("no worker holds a channel")


async def wait_all_sent(url: str, total: int) -> None:
    """The last post is recorded 'sent' just after Discord made it: wait for the outbox to say so."""
    conn = await asyncpg.connect(url)
    try:
        for _ in range(600):
            if await conn.fetchval("SELECT count(*) FROM deliveries WHERE status = 'sent'") == total:
                return
            await asyncio.sleep(0.1)
    finally:
        await conn.close()
    raise RuntimeError("the outbox never recorded every post as sent")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url",
        help="a PostgreSQL server's URL (databases are created); default: a throwaway cluster",
    )
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--papers", type=int, default=10, help="posts per channel")
    parser.add_argument("--lease", type=int, default=5, help="DELIVERY_LEASE_SECONDS of the workers")
    parser.add_argument(
        "--runs", choices=("all", "kill"), default="all", help="every run, or the kill run only"
    )
    parser.add_argument("--repeat", type=int, default=1, help="run each this many times")
    parser.add_argument("--timeline", action="store_true", help="print each run's posts per second")
    parser.add_argument("--logs", type=Path, help="keep the workers' logs in this folder")
    args = parser.parse_args()
    runs = [(1, False), (2, False), (4, False), (4, True)]
    rows = []
    cluster = None if args.database_url else start_cluster()
    server = args.database_url or cluster.url("postgres")  # type: ignore[union-attr]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = args.logs or Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            for n in range(args.repeat):
                for workers, kill in runs if args.runs == "all" else runs[-1:]:
                    rows.append(await run(server, workers, kill, args, folder, n))
                    print(rows[-1], flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
    print()
    print(
        "| deliver processes | posts | channels | exactly once | first to last post (s) | least the limits allow (s) "
        "| ratio | 429s: global / channel | load average |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    asyncio.run(main())

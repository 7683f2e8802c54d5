"""Real `python -m bot` processes with ROLES, on one database, against the loopback Discord and arXiv; waits on
what they log and store, with generous bounds."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bot.clock import SystemClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import LoopbackDiscord
from bot.models import Paper, Wanted
from bot.store import open_store
from tests.cli.process import clean_env
from tests.e2e.helpers import embed_urls
from tests.factories import make_paper


class BotProcess:
    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log

    @classmethod
    async def start(cls, env: dict[str, str], log: Path) -> BotProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            env=clean_env(env, log.parent),
            cwd=log.parent,
            stdout=log.open("ab"),
            stderr=asyncio.subprocess.STDOUT,
        )
        return cls(proc, log)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    async def wait_for_line(self, pattern: str, timeout: float = 60) -> None:  # noqa: ASYNC109
        regex = re.compile(pattern)
        await eventually(lambda: _true(bool(regex.search(self.text()))), timeout, lambda: self.text()[-3000:])

    async def kill(self) -> None:
        """SIGKILL: nothing of the process runs after it (no cleanup, no lease released)."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), timeout=60)


async def _true(value: bool) -> bool:
    return value


async def eventually(
    check: Callable[[], Awaitable[bool]],
    timeout: float = 60,  # noqa: ASYNC109
    explain: Callable[[], str] = lambda: "",
) -> None:
    """Wait until `check()` holds: for what other processes do, which sends this process no event."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {explain()}")
        await asyncio.sleep(0.1)


async def all_sent(db: asyncpg.Connection, total: int, workers: Sequence[BotProcess]) -> None:
    """Wait until the outbox's `total` rows are sent (the workers' last logs explain a timeout)."""

    async def done() -> bool:
        return await db.fetchval("SELECT count(*) FROM deliveries WHERE status = 'sent'") == total

    await eventually(done, 120, lambda: "\n".join(w.text()[-2000:] for w in workers))


def assert_each_posted_once(
    discord: LoopbackDiscord, channels: Sequence[int], papers: Sequence[Paper]
) -> None:
    for channel in channels:
        urls = embed_urls(discord.messages(channel))
        assert Counter(urls) == Counter(p.abs_url for p in papers), (channel, urls)  # each once, none missing


CHANNELS, PAPERS = 5, 8


async def fill_outbox(
    url: str, channels: list[int], guild_id: int, papers: list[Paper] | None = None
) -> list[Paper]:
    """Every paper (PAPERS made-up ones unless given) queued as a card for each channel, followed as text
    channels; returns the papers."""
    now = datetime.now(UTC)
    if papers is None:
        papers = [make_paper(i, published=now - timedelta(minutes=30 - i)) for i in range(PAPERS)]
    async with await open_store(url, SystemClock()) as store:
        await store.papers.upsert(papers, seen_at=now)
        topic = await store.topics.create(guild_id=guild_id, name="T", description="", query="ti:x", at=now)
        for channel in channels:  # followed in text channels, their kind recorded as /follow records it
            await store.follows.upsert(
                guild_id=guild_id,
                channel_id=channel,
                topic_id=topic.id,
                mode="each",
                digest_hour=8,
                created_by=None,
                at=now,
                channel_type=0,
            )
        wanted = [Wanted(guild_id, c, p.arxiv_id, "each", topic.id) for c in channels for p in papers]
        await store.deliveries.enqueue(wanted, now)
    return papers


def deliver_env(discord: LoopbackDiscord, url: str) -> dict[str, str]:
    return {
        "ROLES": "deliver",
        "DISCORD_TOKEN": discord.token,
        "DISCORD_API_BASE": discord.api_base,
        "DISCORD_GATEWAY_URL": discord.gateway_url,
        "DATABASE_URL": url,
        "POSTS_PER_CHANNEL_PER_CYCLE": "50",
        "DELIVER_INTERVAL_SECONDS": "5",
        "DELIVERY_LEASE_SECONDS": "3",
        "LOG_LEVEL": "INFO",
    }


def poll_env(arxiv: LoopbackArxiv, url: str) -> dict[str, str]:
    return {
        "ROLES": "poll",
        "DATABASE_URL": url,
        "ARXIV_API_URL": arxiv.url,
        "ARXIV_RSS_URL": "off",
        "ARXIV_MIN_INTERVAL_SECONDS": "0",
        "ARXIV_CATEGORIES": "cs.LG",
        "LOG_LEVEL": "INFO",
    }

"""PostgreSQL restarting under load: deliver processes and a poller on one database keep going once it is back;
every (channel, paper) is posted exactly once and the poller holds the poll lock again."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import asyncpg
import pytest

from bot.loopback.arxiv import LoopbackArxiv
from bot.store.postgres.database import AdvisoryLock
from tests.e2e.bot_processes import (
    CHANNELS,
    PAPERS,
    BotProcess,
    deliver_env,
    eventually,
    fill_outbox,
    poll_env,
)
from tests.e2e.helpers import embed_urls
from tests.fakes.checked_discord import FakeDiscord
from tests.store.postgres_cluster import Cluster

# These start the bot as processes with their own settings (DATABASE_URL included): one run, not one per back end.
pytestmark = pytest.mark.sqlite_only


async def advisory_locks(url: str) -> int:
    """Holders of the poll lock (deliver workers hold liveness locks of their own: not counted)."""
    try:
        conn = await asyncpg.connect(url)
    except (OSError, asyncpg.PostgresError):
        return -1  # not back yet
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND (classid::bigint << 32 | objid::bigint) = $1",
                AdvisoryLock(url, "poll").key,
            )
        )
    finally:
        await conn.close()


async def test_every_role_carries_on_after_postgresql_restarts_posting_each_paper_once(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, postgres_cluster: Cluster, postgres_url: str
) -> None:
    guild = discord.add_guild("Lab")
    channels = [discord.add_text_channel(guild, f"papers-{i}").id for i in range(CHANNELS)]
    papers = await fill_outbox(postgres_url, channels, guild.id)
    discord.set_rate_limit(per_channel=(2, 1.0), global_per_second=None)
    poller = await BotProcess.start(poll_env(arxiv, postgres_url), tmp_path / "poll.log")
    workers = [
        await BotProcess.start(deliver_env(discord, postgres_url), tmp_path / f"deliver-{i}.log")
        for i in range(2)
    ]
    processes = [poller, *workers]
    try:
        await poller.wait_for_line(r"papers fetched in \d+ pages")
        posted = lambda: sum(len(discord.messages(c)) for c in channels)  # noqa: E731
        await discord.wait_for(lambda: posted() >= 6, timeout=90)
        await asyncio.to_thread(postgres_cluster.restart)  # mid-batch: every session ends
        assert posted() < CHANNELS * PAPERS, "the batch finished before the restart"

        async def all_sent() -> bool:
            try:
                conn = await asyncpg.connect(postgres_url)
            except (OSError, asyncpg.PostgresError):
                return False
            try:
                sent = await conn.fetchval("SELECT count(*) FROM deliveries WHERE status = 'sent'")
            finally:
                await conn.close()
            return bool(sent == CHANNELS * PAPERS)

        explain = lambda: "\n".join(p.text()[-2500:] for p in processes)  # noqa: E731
        await eventually(all_sent, 120, explain)
        await eventually(
            lambda: _is(advisory_locks(postgres_url), 1), 60, explain
        )  # the poller holds it again
        await poller.wait_for_line("taking the lock again")
    finally:
        codes = [await p.stop() for p in processes]
    for channel in channels:
        assert Counter(embed_urls(discord.messages(channel))) == Counter(p.abs_url for p in papers)
    assert all(code in (0, -15) for code in codes), codes
    for process in processes:
        assert "Traceback" not in process.text(), process.text()[-4000:]


async def _is(value: object, expected: int) -> bool:
    return await value == expected  # type: ignore[misc]

"""Deliver processes sharing Discord's global rate limit: three `python -m bot` processes with ROLES=deliver post
one PostgreSQL outbox through one loopback Discord whose global limit (10 requests a second here, set alike for
the bot with DISCORD_GLOBAL_RATE_LIMIT) each of them alone could exceed. They take their turns from the store, so
Discord refuses none of their requests (before, each paced itself alone and the three drew dozens of 429s), and
each paper still arrives once in each channel."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from tests.e2e.bot_processes import (
    CHANNELS,
    PAPERS,
    BotProcess,
    all_sent,
    assert_each_posted_once,
    deliver_env,
    fill_outbox,
)
from tests.fakes.checked_discord import FakeDiscord

# These start the bot as processes with their own settings (DATABASE_URL included): one run, not one per back end.
pytestmark = pytest.mark.sqlite_only

GLOBAL_PER_SECOND = 10


async def test_deliver_processes_together_stay_within_the_bot_tokens_global_rate_limit(
    tmp_path: Path, discord: FakeDiscord, postgres_url: str
) -> None:
    guild = discord.add_guild("Lab")
    channels = [discord.add_text_channel(guild, f"papers-{i}").id for i in range(CHANNELS)]
    papers = await fill_outbox(postgres_url, channels, guild.id)
    # No channel limits: every 429 is the global one.
    discord.set_rate_limit(per_channel=None, global_per_second=GLOBAL_PER_SECOND)
    env = {**deliver_env(discord, postgres_url), "DISCORD_GLOBAL_RATE_LIMIT": str(GLOBAL_PER_SECOND)}
    workers = [await BotProcess.start(env, tmp_path / f"deliver-{i}.log") for i in range(3)]
    db = await asyncpg.connect(postgres_url)
    try:
        total = CHANNELS * PAPERS
        await all_sent(db, total, workers)
    finally:
        await db.close()
        for worker in workers:
            await worker.stop()
    refused = [f"{r.method} {r.path}" for r in discord.requests if r.status == 429]
    assert refused == [], refused
    for worker in workers:
        assert "Traceback" not in worker.text(), worker.text()[-3000:]
    assert_each_posted_once(discord, channels, papers)

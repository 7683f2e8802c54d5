"""Run the real PaperBot against the loopback Discord and arXiv: in-process, real client, real SQLite file."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from bot.app import PaperBot
from bot.clock import Clock
from bot.config import Settings
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import LoopbackDiscord, running_client
from bot.topics.catalog import CatalogTopic


def loopback_settings(
    folder: Path, discord: LoopbackDiscord, arxiv: LoopbackArxiv, **overrides: Any
) -> Settings:
    values: dict[str, Any] = {
        "_env_file": None,  # a developer's .env must not leak into a loopback run
        "discord_token": discord.token,
        "discord_api_base": discord.api_base,
        "discord_gateway_url": discord.gateway_url,
        "database_path": folder / "paperwatch.sqlite3",
        "arxiv_api_url": arxiv.url,
        "arxiv_rss_url": arxiv.rss_url,
        "arxiv_min_interval_seconds": 0,
        "arxiv_categories": ("cs.AI", "cs.CL", "cs.LG"),
    }
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def running_paperbot(
    folder: Path,
    discord: LoopbackDiscord,
    arxiv: LoopbackArxiv,
    *,
    clock: Clock | None = None,
    schedule: bool = False,
    **settings: Any,
) -> AsyncIterator[PaperBot]:
    """A logged-in PaperBot with its commands synced. Without `schedule`, tests drive polls and deliveries
    themselves (`bot.ctx.ingestor().poll_once()`, `bot.worker.deliver_once()`), so nothing runs on a timer."""
    settled = loopback_settings(folder, discord, arxiv, **settings)
    async with running_bot(settled, discord, clock=clock, schedule=schedule) as bot:
        yield bot


@contextlib.asynccontextmanager
async def running_bot(
    settings: Settings,
    discord: LoopbackDiscord,
    *,
    clock: Clock | None = None,
    schedule: bool = False,
    extra_topics: Sequence[CatalogTopic] = (),
) -> AsyncIterator[PaperBot]:
    """A logged-in PaperBot on these settings, talking to `discord` (whatever its settings name)."""
    bot = PaperBot(
        settings,
        clock=clock,
        schedule=schedule,
        extra_topics=extra_topics,
        guild_ready_timeout=0.1,  # the fake sends every guild at once; no need to wait 2 s for stragglers
    )
    async with running_client(discord, bot):
        yield bot

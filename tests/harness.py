"""Run the real PaperBot against the loopback Discord and arXiv: in-process, real client, real SQLite file."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bot.app import PaperBot
from bot.clock import Clock
from bot.config import Settings
from bot.store import Store
from tests.fakes.arxiv_server import FakeArxiv
from tests.fakes.discord_server import FakeDiscord, running_client


def test_settings(tmp_path: Path, discord: FakeDiscord, arxiv: FakeArxiv, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "discord_token": discord.token,
        "discord_api_base": discord.api_base,
        "discord_gateway_url": discord.gateway_url,
        "database_path": tmp_path / "paperwatch.sqlite3",
        "arxiv_api_url": arxiv.url,
        "arxiv_rss_url": arxiv.rss_url,
        "arxiv_min_interval_seconds": 0,
        "arxiv_categories": ("cs.AI", "cs.CL", "cs.LG"),
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # a developer's .env must not leak into tests


@contextlib.asynccontextmanager
async def running_paperbot(
    tmp_path: Path,
    discord: FakeDiscord,
    arxiv: FakeArxiv,
    *,
    clock: Clock | None = None,
    schedule: bool = False,
    **settings: Any,
) -> AsyncIterator[PaperBot]:
    """A logged-in PaperBot with its commands synced. Without `schedule`, tests drive polls and deliveries
    themselves (`bot.ctx.ingestor().poll_once()`, `bot.worker.deliver_once()`), so nothing runs on a timer."""
    bot = PaperBot(
        test_settings(tmp_path, discord, arxiv, **settings),
        clock=clock,
        schedule=schedule,
        guild_ready_timeout=0.1,  # the fake sends every guild at once; no need to wait 2 s for stragglers
    )
    async with running_client(discord, bot):
        yield bot


def store_of(bot: PaperBot) -> Store:
    """The running bot's own store, which it hands to no cog: for a test that sets up a state no command can
    make (more topics than a server may create, a catalog a later release brings) or reads one none shows."""
    return bot.ctx._store

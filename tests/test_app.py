"""The bot starts against the loopback Discord: logs in, loads its cogs, syncs its commands, and shuts down."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.arxiv_server import FakeArxiv
from tests.fakes.discord_server import FakeDiscord
from tests.harness import running_paperbot


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeDiscord, FakeArxiv]]:
    async with FakeDiscord() as discord, FakeArxiv() as arxiv:
        yield discord, arxiv


async def test_starts_with_catalog_and_commands(tmp_path: Path, fakes: tuple[FakeDiscord, FakeArxiv]) -> None:
    discord, arxiv = fakes
    guild = discord.add_guild("Lab")
    discord.add_text_channel(guild, "papers")
    async with running_paperbot(tmp_path, discord, arxiv) as bot:
        assert bot.allowed_mentions is not None and not bot.allowed_mentions.everyone
        assert len(await bot.ctx.store.topics.all()) >= 40
        assert set(bot.cogs) == {"FollowCog", "MomentumCog", "HistoryCog", "AdminCog"}
    assert discord.violations == []

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


async def test_every_command_and_option_is_described(tmp_path: Path, fakes: tuple[FakeDiscord, FakeArxiv]) -> None:
    discord, arxiv = fakes
    discord.add_guild("Lab")
    async with running_paperbot(tmp_path, discord, arxiv):
        pass
    names = {c["name"] for c in discord.commands}
    assert names == {"follow", "unfollow", "topics", "momentum", "latest", "search", "paper", "status"}
    for command in discord.commands:
        # discord.py fills a missing description with "…": that is no help text
        assert command["description"].strip() not in ("", "…"), command["name"]
        for option in command.get("options", []):
            assert option["description"].strip() not in ("", "…"), f"/{command['name']} {option['name']}"
            assert len(option["description"]) <= 100

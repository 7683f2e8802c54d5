"""What the command tests share: one bot per module (a start costs seconds) and a fresh server per test."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.app import PaperBot
from bot.models import Paper
from tests.fakes.arxiv_server import FakeArxiv
from tests.fakes.discord_server import (
    LOADING,
    SEND_MESSAGES,
    Channel,
    FakeDiscord,
    Guild,
    Interaction,
    Member,
)

# Async tests share the module's event loop, where the one bot of the module runs.
module_loop = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Env:
    discord: FakeDiscord
    arxiv: FakeArxiv
    bot: PaperBot
    servers: itertools.count[int] = field(default_factory=itertools.count)

    def new_server(self) -> Server:
        guild = self.discord.add_guild(f"Lab {next(self.servers)}")
        channel = self.discord.add_text_channel(guild, "papers")
        alice = self.discord.add_member(guild, "alice", permissions=SEND_MESSAGES)
        return Server(self, guild, channel, alice)


@dataclass
class Server:
    env: Env
    guild: Guild
    channel: Channel
    alice: Member

    async def run(self, command: str, **options: Any) -> Interaction:
        given = [{"name": k, "value": v} for k, v in options.items()]
        return await self.env.discord.invoke(self.guild, self.channel, self.alice, command, given)

    async def follow(self, topic: str) -> None:
        ctx = self.env.bot.ctx
        row = await ctx.store.topics.find(self.guild.id, topic)
        assert row is not None, topic
        await ctx.store.follows.upsert(
            guild_id=self.guild.id,
            channel_id=self.channel.id,
            topic_id=row.id,
            mode="each",
            digest_hour=8,
            created_by=None,
            at=ctx.clock.now(),
        )


async def store_as_polled(bot: PaperBot, papers: Sequence[Paper]) -> None:
    """What a poll does with a page: store, match topics, queue posts, in one transaction."""
    async with bot.ctx.store.transaction():
        result = await bot.ctx.store.papers.upsert(papers, seen_at=bot.ctx.clock.now())
        await bot.ctx.on_ingested(result, papers)


async def answer(interaction: Interaction) -> dict[str, Any]:
    """The message the user sees once the bot has answered (a deferred one filled by its follow-up)."""
    return await interaction.wait_original(lambda m: not m["flags"] & LOADING)

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
        """#papers follows `topic`, one post per paper, as /follow would have it."""
        follows = self.env.bot.services.follows
        await follows.follow(await follows.plan(self.guild.id, self.channel.id, topic))


async def store_as_polled(bot: PaperBot, papers: Sequence[Paper]) -> None:
    """What a poll does with a page: store, match topics, queue posts, in one transaction."""
    await bot.ctx.intake.store_papers(papers, announce=True)


async def answer(interaction: Interaction) -> dict[str, Any]:
    """The message the user sees once the bot has answered (a deferred one filled by its follow-up)."""
    return await interaction.wait_original(lambda m: not m["flags"] & LOADING)

"""What the command tests share: one bot per module (a start costs seconds) and a fresh server per test; a
Discord whose members can hold permissions on one channel; running a command and reading its answer."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.app import PaperBot
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import EPHEMERAL, LOADING, VIEW_CHANNEL, Channel, Guild, Interaction, Member
from bot.loopback.discord.records import SEND_MESSAGES, USE_APPLICATION_COMMANDS
from bot.models import Paper
from tests.fakes.checked_discord import FakeDiscord

MANAGE_CHANNELS = 1 << 4  # Discord's Manage Channels permission
MEMBER = VIEW_CHANNEL | SEND_MESSAGES | USE_APPLICATION_COMMANDS  # an ordinary member of a server
RL = "RL Post-Training"  # the catalog's topic most tests follow

# Async tests share the module's event loop, where the one bot of the module runs.
module_loop = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Env:
    discord: FakeDiscord
    arxiv: LoopbackArxiv
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


class OverwriteDiscord(FakeDiscord):
    """The fake plus member permission overwrites on a channel (it models only the bot's own), so a member can
    hold Manage Channels on one channel and nowhere else."""

    def __init__(self) -> None:
        super().__init__()
        self.member_allows: dict[int, dict[int, int]] = {}

    def allow(self, channel: Channel, member: Member, permissions: int) -> None:
        self.member_allows.setdefault(channel.id, {})[member.id] = permissions

    def _overwrites(self, channel: Channel) -> list[dict[str, Any]]:
        extra = [
            {"id": str(member_id), "type": 1, "allow": str(bits), "deny": "0"}
            for member_id, bits in self.member_allows.get(channel.id, {}).items()
        ]
        return super()._overwrites(channel) + extra


async def invoke(
    discord: FakeDiscord, guild: Guild, where: Channel, member: Member, command: str, /, **options: Any
) -> Interaction:
    """Run a command typed in `where`; keyword arguments are its options (including `channel`)."""
    return await discord.invoke(
        guild, where, member, command, [{"name": k, "value": v} for k, v in options.items()]
    )


async def public_reply(interaction: Interaction) -> str:
    """The follow-up that fills a public "thinking" message."""
    response = await interaction.wait_response()
    assert response["type"] == 5 and not (response.get("data") or {}).get("flags", 0) & EPHEMERAL
    [message] = await interaction.wait_followups(1)
    assert not message["flags"] & EPHEMERAL
    return message["content"]


async def ephemeral_reply(interaction: Interaction) -> str:
    """An immediate private answer (errors and lists)."""
    response = await interaction.wait_response()
    assert response["type"] == 4, response
    assert response["data"]["flags"] & EPHEMERAL
    return response["data"].get("content") or ""

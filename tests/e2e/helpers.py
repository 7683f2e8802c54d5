"""Shared steps of the end-to-end scenarios."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

from bot.app import PaperBot
from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import Channel, Guild
from bot.loopback.harness import running_paperbot
from bot.models import Mode, Paper
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord

RL_TITLES = [
    "GRPO post-training makes small language models better at math",
    "Verifiable rewards for reinforcement learning of LLM reasoning",
    "RLHF without a reward model: preference optimisation at scale",
    "On-policy RL fine-tuning of language models for code",
    "Scaling reinforcement learning post-training for reasoning models",
]
OTHER_TITLES = [f"Graph colouring bounds for sparse random graphs, part {i}" for i in range(20)]


def announced(clock: FakeClock, titles: list[str], start: int = 0) -> list[Paper]:
    """Papers submitted in the hours before the clock's now, one per title."""
    return [
        make_paper(
            start + i,
            title=t,
            abstract=f"{t}. We report results.",
            published=clock.now() - timedelta(hours=1 + i),
        )
        for i, t in enumerate(titles)
    ]


async def follow(bot: PaperBot, guild_id: int, channel_id: int, topic: str, mode: Mode = "each") -> int:
    """The channel follows `topic` as /follow would have it; returns the topic's id."""
    follows = bot.services.follows
    done = await follows.follow(await follows.plan(guild_id, channel_id, topic, mode=mode))
    return done.topic.id


def embed_urls(messages: list[dict]) -> list[str]:
    return [e.get("url") for m in messages for e in m.get("embeds") or []]


async def first_poll(bot: PaperBot) -> None:
    """The poll a fresh install makes at start (its papers are history: matched, never posted); scenarios
    about new papers begin after it."""
    report = await bot.ctx.ingestor().poll_once()
    assert report.complete


@contextlib.asynccontextmanager
async def lab_following(
    tmp_path: Path,
    discord: FakeDiscord,
    arxiv: LoopbackArxiv,
    clock: FakeClock,
    topic: str = "RL Post-Training",
) -> AsyncIterator[tuple[PaperBot, Guild, Channel]]:
    """The common opening: a server with a #papers channel following `topic`, the bot past its first poll."""
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, channel.id, topic)
        yield bot, guild, channel

"""The bot starts against the loopback Discord: logs in, loads its cogs, syncs its commands, and shuts down."""

from __future__ import annotations

import gc
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import discord as discord_py
import pytest

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import VIEW_CHANNEL
from bot.loopback.discord.records import SEND_MESSAGES, USE_APPLICATION_COMMANDS
from bot.loopback.harness import running_paperbot
from bot.scheduler import Scheduler
from tests.fakes.checked_discord import FakeDiscord


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeDiscord, LoopbackArxiv]]:
    async with FakeDiscord() as discord, LoopbackArxiv() as arxiv:
        yield discord, arxiv


async def test_starts_with_catalog_and_commands(
    tmp_path: Path, fakes: tuple[FakeDiscord, LoopbackArxiv]
) -> None:
    discord, arxiv = fakes
    guild = discord.add_guild("Lab")
    discord.add_text_channel(guild, "papers")
    async with running_paperbot(tmp_path, discord, arxiv) as bot:
        assert bot.allowed_mentions is not None and not bot.allowed_mentions.everyone
        assert len(await bot.services.topics.visible_to(0)) >= 40
        assert set(bot.cogs) == {
            "FollowCog",
            "MomentumCog",
            "HistoryCog",
            "AdminCog",
            "AskCog",
            "CardsCog",
            "SavedCog",
        }
    assert discord.violations == []


async def test_the_bot_asks_discord_for_no_message_events_and_keeps_no_messages(
    tmp_path: Path, fakes: tuple[FakeDiscord, LoopbackArxiv]
) -> None:
    """Slash commands and buttons bring their own payloads: the messages of every channel, which discord.py
    kept (1,000 of them) for events the bot never handles, are neither asked for nor kept."""
    discord, arxiv = fakes
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    member = discord.add_member(
        guild, "ann", permissions=VIEW_CHANNEL | SEND_MESSAGES | USE_APPLICATION_COMMANDS
    )
    async with running_paperbot(tmp_path, discord, arxiv) as bot:
        posted = bot.get_channel(channel.id)
        assert isinstance(posted, discord_py.TextChannel)
        await posted.send("a card")  # in a channel: its MESSAGE_CREATE comes to a bot that asks for them
        answered = await discord.invoke(guild, channel, member, "topics", [])
        await answered.wait_response()  # an event after it was handled: the message's would have been too
        assert list(bot.cached_messages) == []
    [intents] = [entry[1] for entry in discord.gateway_log if entry[0] == "IDENTIFY"]
    assert intents == discord_py.Intents(guilds=True).value
    assert discord.violations == []


async def test_what_lives_as_long_as_the_bot_is_out_of_the_collectors_sight(
    tmp_path: Path, fakes: tuple[FakeDiscord, LoopbackArxiv]
) -> None:
    """Full collections rescanning discord.py, the catalog and the topic index held the loop for 100-270 ms."""
    discord, arxiv = fakes
    gc.unfreeze()
    try:
        async with running_paperbot(tmp_path, discord, arxiv) as bot:
            assert bot.services is not None
            assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


async def test_every_command_and_option_is_described(
    tmp_path: Path, fakes: tuple[FakeDiscord, LoopbackArxiv]
) -> None:
    discord, arxiv = fakes
    discord.add_guild("Lab")
    async with running_paperbot(tmp_path, discord, arxiv):
        pass
    names = {c["name"] for c in discord.commands}
    assert names == {
        "follow",
        "unfollow",
        "topics",
        "momentum",
        "latest",
        "search",
        "paper",
        "status",
        "ask",
        "brief",
        "saved",
        "ratings",
    }
    for command in discord.commands:
        # discord.py fills a missing description with "…": that is no help text
        assert command["description"].strip() not in ("", "…"), command["name"]
        for option in command.get("options", []):
            assert option["description"].strip() not in ("", "…"), f"/{command['name']} {option['name']}"
            assert len(option["description"]) <= 100


async def test_the_poll_job_refuses_to_poll_arxiv_without_a_real_contact(
    tmp_path: Path,
    fakes: tuple[FakeDiscord, LoopbackArxiv],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    discord, arxiv = fakes
    discord.add_guild("Lab")
    with socket.socket() as sock:  # were a request made after all, it would meet a proxy that refuses it
        sock.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{sock.getsockname()[1]}")
    async with running_paperbot(
        tmp_path, discord, arxiv, clock=FakeClock(), arxiv_api_url="https://export.arxiv.org/api/query"
    ) as bot:
        scheduler = Scheduler(bot.ctx, bot.worker)
        await scheduler.poll()  # the job the bot runs at start and every POLL_INTERVAL_MINUTES
        [state] = (await bot.services.status.of_server(0)).sources  # what /status shows
    assert state.last_error is not None and state.last_error.startswith(
        "ARXIV_CONTACT is not set: arXiv asks"
    )
    assert state.last_success is None and state.consecutive_failures == 1
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        f"poll not run: {state.last_error}"
    ]
    assert bot.ctx.arxiv_requests_sent == 0

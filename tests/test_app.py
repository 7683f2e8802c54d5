"""The bot starts against the loopback Discord: logs in, loads its cogs, syncs its commands, and shuts down."""

from __future__ import annotations

import gc
import json
import socket
import subprocess
import sys
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


ARENAS = """
import ctypes, json, re, threading
from bot.app import share_malloc_arenas

applied = share_malloc_arenas()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
start, done = threading.Barrier(9), threading.Barrier(9)

def allocate():  # allocating at once, as SQLite's threads do: each would get an arena of its own
    start.wait()
    blocks = [libc.malloc(4096) for _ in range(2000)]
    done.wait()
    for block in blocks:
        libc.free(block)

threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
start.wait()
done.wait()
for thread in threads:
    thread.join()
buffer, size = ctypes.c_char_p(), ctypes.c_size_t()
libc.open_memstream.restype = ctypes.c_void_p
stream = libc.open_memstream(ctypes.byref(buffer), ctypes.byref(size))
libc.malloc_info(0, ctypes.c_void_p(stream))
libc.fclose(ctypes.c_void_p(stream))
print(json.dumps({"applied": applied, "arenas": len(re.findall(r"<heap nr=", buffer.value.decode()))}))
"""


def test_the_bots_threads_share_two_malloc_arenas() -> None:
    """Eight threads allocating at once in a fresh process spread over two malloc arenas, not nine."""
    done = subprocess.run(
        [sys.executable, "-c", ARENAS],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["applied"] and report["arenas"] <= 2

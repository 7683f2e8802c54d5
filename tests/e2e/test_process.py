"""The bot as a real process (`python -m bot`) against the loopback Discord and arXiv: killed with SIGKILL in
the middle of a delivery batch and started again, it posts every paper exactly once."""

from __future__ import annotations

import asyncio
import signal
import socket
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.clock import SystemClock
from bot.config import Settings
from bot.context import open_context
from bot.ingest import source_key
from bot.loopback.arxiv import LoopbackArxiv
from bot.store import open_store
from tests.cli.process import clean_env
from tests.e2e.helpers import RL_TITLES, embed_urls
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord

pytestmark = pytest.mark.sqlite_only  # the bot as a process, on its own settings and SQLite file


def sent(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT COUNT(*) FROM deliveries WHERE status = 'sent'").fetchone()[0]


async def start_bot(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        env=clean_env(env, log.parent),
        cwd=log.parent,
        stdout=log.open("ab"),
        stderr=asyncio.subprocess.STDOUT,
    )


async def test_sigkill_mid_batch_then_restart_posts_each_paper_once(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    db = tmp_path / "paperwatch.sqlite3"
    async with open_context(Settings(_env_file=None, database_path=db), SystemClock()) as ctx:
        follows = ctx.services.follows
        await follows.follow(await follows.plan(guild.id, channel.id, "RL Post-Training"))
    store = await open_store(db, SystemClock())
    # the bot has polled before (its first poll's papers are history, never posted)
    await store.sources.record_success(
        source_key(("cs.LG", "cs.AI")), datetime.now(UTC), watermark=datetime.now(UTC) - timedelta(hours=2)
    )
    await store.close()

    now = datetime.now(UTC)
    titles = [f"{t} ({i})" for i in range(3) for t in RL_TITLES][:12]
    papers = [make_paper(i, title=t, published=now - timedelta(minutes=10 + i)) for i, t in enumerate(titles)]
    arxiv.papers = papers
    discord.set_rate_limit(
        per_channel=(2, 1.0), global_per_second=None
    )  # slow posting: a batch takes seconds
    env = {
        "DISCORD_TOKEN": discord.token,
        "DISCORD_API_BASE": discord.api_base,
        "DISCORD_GATEWAY_URL": discord.gateway_url,
        "DATABASE_PATH": str(db),
        "ARXIV_API_URL": arxiv.url,
        "ARXIV_RSS_URL": arxiv.rss_url,
        "ARXIV_MIN_INTERVAL_SECONDS": "0",
        "ARXIV_CATEGORIES": "cs.LG cs.AI",
        "POSTS_PER_CHANNEL_PER_CYCLE": "50",
        "DELIVER_INTERVAL_SECONDS": "5",
        "LOG_LEVEL": "INFO",
    }
    log = tmp_path / "bot.log"
    first = await start_bot(env, log)
    try:
        await discord.wait_for(lambda: len(discord.messages(channel.id)) >= 4, timeout=60)
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    assert len(discord.messages(channel.id)) < len(papers), "the batch finished before the kill"

    second = await start_bot(env, log)
    try:
        await discord.wait_for(lambda: len(discord.messages(channel.id)) >= len(papers), timeout=90)
    finally:
        # A clean stop lets the post in flight finish and be recorded.
        second.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(second.wait(), timeout=30)
    assert sent(db) == len(papers)
    urls = embed_urls(discord.messages(channel.id))
    assert sorted(urls) == sorted(p.abs_url for p in papers), log.read_text()[-3000:]
    assert code in (0, -signal.SIGTERM)
    assert discord.token not in log.read_text()  # the token is never logged


async def test_a_wrong_token_stops_with_one_clear_line(tmp_path: Path, discord: FakeDiscord) -> None:
    env = {
        "DISCORD_TOKEN": "not-the-token",
        "DISCORD_API_BASE": discord.api_base,
        "DISCORD_GATEWAY_URL": discord.gateway_url,
        "DATABASE_PATH": str(tmp_path / "db.sqlite3"),
        "LOG_LEVEL": "ERROR",
    }
    log = tmp_path / "bot.log"
    proc = await start_bot(env, log)
    code = await asyncio.wait_for(proc.wait(), timeout=60)
    output = log.read_text()
    assert code == 2
    assert (
        output.strip().splitlines()[-1].startswith("paperwatch: Discord refused the token in DISCORD_TOKEN")
    )
    assert "Traceback" not in output and "not-the-token" not in output


async def run_until_exit(env: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    log = tmp_path / "bot.log"
    proc = await start_bot({"DATABASE_PATH": str(tmp_path / "db.sqlite3"), **env}, log)
    code = await asyncio.wait_for(proc.wait(), timeout=60)
    return code, log.read_text()


async def test_an_unreachable_discord_stops_with_one_line_naming_it(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on: the connection is refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api/v10"
    code, output = await run_until_exit({"DISCORD_TOKEN": "a.b.c", "DISCORD_API_BASE": api}, tmp_path)
    assert code == 3  # "could not reach", apart from bad settings (2)
    last = output.strip().splitlines()[-1]
    assert last.startswith(
        f"paperwatch: could not reach Discord at {api} (Cannot connect to host 127.0.0.1:{port}"
    )
    assert last.endswith(
        "check the network connection (DNS, firewall, proxy) and DISCORD_API_BASE, then start again"
    )
    assert "Traceback" not in output


async def test_a_discord_api_base_that_is_not_discord_is_named(tmp_path: Path, arxiv: LoopbackArxiv) -> None:
    api = f"{arxiv.base_url}/api/v10"  # an HTTP server that answers, but is not Discord (404 to the login)
    code, output = await run_until_exit({"DISCORD_TOKEN": "a.b.c", "DISCORD_API_BASE": api}, tmp_path)
    assert code == 3
    assert output.strip().splitlines()[-1] == (
        f"paperwatch: {api} answered the login with HTTP 404, not as Discord's API would: check "
        "DISCORD_API_BASE (empty for Discord itself, or your proxy's /api/v10 URL)"
    )
    assert "Traceback" not in output

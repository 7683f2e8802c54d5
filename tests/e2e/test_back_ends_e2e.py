"""The end-to-end tests run the whole bot on each back end in turn (tests/store/back_ends.py `back_end`): on
PostgreSQL the bot's papers land in the session's database and no SQLite file appears."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import asyncpg

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.harness import running_paperbot
from tests.e2e.helpers import first_poll
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord


async def test_the_bot_stores_in_the_back_end_of_the_run(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock, back_end: str
) -> None:
    arxiv.papers = [make_paper(n, published=clock.now() - timedelta(hours=n)) for n in range(1, 4)]
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        stored = await bot.services.status.papers_stored()
    assert stored == 3
    sqlite_file = tmp_path / "paperwatch.sqlite3"
    if back_end == "postgres":
        assert not sqlite_file.exists()
        conn = await asyncpg.connect(os.environ["DATABASE_URL"])
        try:
            papers = await conn.fetchval("SELECT COUNT(*) FROM papers")
        finally:
            await conn.close()
        assert papers == stored
    else:
        assert sqlite_file.exists()

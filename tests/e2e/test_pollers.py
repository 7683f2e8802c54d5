"""Poll processes (`python -m bot` with ROLES=poll, no Discord) on one PostgreSQL database against the loopback
arXiv: exactly one polls; the second waits for the poll lock, and takes over when the holder is killed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.clock import SystemClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.scheduler import WAITING
from bot.store import open_store
from tests.e2e.bot_processes import BotProcess, eventually, poll_env
from tests.factories import make_paper

# These start the bot as processes with their own settings (DATABASE_URL included): one run, not one per back end.
pytestmark = pytest.mark.sqlite_only

POLLED = r"papers fetched in \d+ pages"


async def stored(url: str, arxiv_id: str) -> bool:
    async with await open_store(url, SystemClock()) as store:
        return await store.papers.get(arxiv_id) is not None


async def test_two_pollers_one_polls_the_other_waits_and_takes_over_when_it_is_killed(
    tmp_path: Path, arxiv: LoopbackArxiv, postgres_url: str
) -> None:
    now = datetime.now(UTC)
    arxiv.papers = [make_paper(i, published=now - timedelta(hours=2 + i)) for i in range(3)]
    first = await BotProcess.start(poll_env(arxiv, postgres_url), tmp_path / "first.log")  # no DISCORD_TOKEN
    second: BotProcess | None = None
    try:
        await first.wait_for_line(POLLED)
        second = await BotProcess.start(poll_env(arxiv, postgres_url), tmp_path / "second.log")
        await second.wait_for_line(WAITING)
        assert WAITING not in first.text()
        assert "papers fetched" not in second.text()  # it waits instead of polling

        late = make_paper(50, published=now - timedelta(minutes=30))
        arxiv.papers = [late, *arxiv.papers]
        await first.kill()  # its database session ends with it, and the lock with the session
        await second.wait_for_line("took the poll lock")
        await second.wait_for_line(POLLED)
        await eventually(lambda: stored(postgres_url, late.arxiv_id), 60)
    finally:
        await first.kill()
        if second is not None:
            assert await second.stop() in (0, -15)
    assert "Traceback" not in first.text() + second.text()

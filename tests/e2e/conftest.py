from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from tests.fakes.checked_discord import FakeDiscord


@pytest.fixture(autouse=True)
def each_back_end(back_end: str) -> str:
    """Every end-to-end test runs on SQLite and on PostgreSQL (tests/store/back_ends.py), but those marked
    `sqlite_only` (they read the SQLite file, or start the bot as a process with its own settings)."""
    return back_end


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
        assert fake.violations == [], fake.violations


@pytest.fixture
async def arxiv() -> AsyncIterator[LoopbackArxiv]:
    async with LoopbackArxiv() as fake:
        yield fake


@pytest.fixture
def clock() -> FakeClock:
    # Tuesday 2026-11-24 21:00 UTC, an hour after an announcement.
    return FakeClock(datetime(2026, 11, 24, 21, 0, tzinfo=UTC))

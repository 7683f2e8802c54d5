from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path, clock: FakeClock) -> AsyncIterator[SqliteStore]:
    """A real SQLite file in a temporary folder, migrated (the SQLite store: some tests read its tables)."""
    opened = await SqliteStore.open(tmp_path / "paperwatch.sqlite3", clock)
    try:
        yield opened
    finally:
        await opened.close()

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import Store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Store]:
    """A real SQLite file in a temporary folder, migrated."""
    opened = await Store.open(tmp_path / "paperwatch.sqlite3", clock)
    try:
        yield opened
    finally:
        await opened.close()

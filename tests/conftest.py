from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore

pytest_plugins = ("tests.store.back_ends",)  # the store's back ends (SQLite; PostgreSQL where a test asks)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[SqliteStore]:
    """A real SQLite file in a temporary folder, migrated (the SQLite store: some tests read its tables); each
    back end in turn for the tests tests/store/back_ends.py parametrizes."""
    from tests.store.back_ends import (
        open_back_end,
    )  # loaded by pytest_plugins (imported first, not rewritten)

    opened = await open_back_end(request, tmp_path, clock)
    try:
        yield opened
    finally:
        await opened.close()

"""The database holds server, channel and member ids: its file, WAL and SHM are the owner's alone, and so are
the folders paperwatch creates for it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import open_store
from tests.factories import make_paper


@pytest.fixture
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # the common default, under which files come out world-readable
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_database_wal_shm_and_new_folders_are_private(
    tmp_path: Path, clock: FakeClock, usual_umask: None
) -> None:
    existing = tmp_path / "srv"
    existing.mkdir(mode=0o755)
    path = existing / "paperwatch" / "data" / "paperwatch.sqlite3"
    store = await open_store(path, clock)
    try:
        await store.papers.upsert([make_paper(1)], seen_at=clock.now())
        files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        assert {f.name: oct(mode(f)) for f in files} == {f.name: "0o600" for f in files}
        assert oct(mode(path.parent)) == oct(mode(path.parent.parent)) == "0o700"
        assert oct(mode(existing)) == "0o755"  # a folder the operator made keeps the mode they chose
    finally:
        await store.close()
    async with await open_store(path, clock) as again:  # and it opens again as it was
        assert await again.papers.count() == 1

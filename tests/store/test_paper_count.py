"""How many papers are stored: /status, /follow's scope check and the CLI ask it often, so the SQLite store keeps
it (migration 0017's triggers) instead of counting a million rows each time; it must stay exact."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore, Store
from tests.factories import make_paper


async def test_the_count_follows_new_papers_and_not_new_versions(store: Store, clock: FakeClock) -> None:
    assert await store.papers.count() == 0
    await store.papers.upsert([make_paper(n) for n in range(1, 6)], seen_at=clock.now())
    assert await store.papers.count() == 5
    newer = make_paper(2, version=2, title="New title", updated=make_paper(2).published + timedelta(days=1))
    await store.papers.upsert([newer, make_paper(3), make_paper(6), make_paper(6)], seen_at=clock.now())
    assert await store.papers.count() == 6


@pytest.mark.sqlite_only
async def test_a_store_from_before_the_kept_count_counts_its_papers_once(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "old.sqlite3"
    async with await SqliteStore.open(path, clock) as store:
        await store.papers.upsert([make_paper(n) for n in range(1, 4)], seen_at=clock.now())
        # The store as it was before migration 0017: no kept count, and no record of the migration.
        await store.db.writer.executescript(
            "DROP TRIGGER paper_count_added; DROP TRIGGER paper_count_removed; DROP TABLE paper_count;"
            " DELETE FROM schema_migrations WHERE version = 17;"
        )
    async with await SqliteStore.open(path, clock) as store:
        assert await store.papers.count() == 3
        await store.papers.upsert([make_paper(4)], seen_at=clock.now())
        assert await store.papers.count() == 4

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.models import Author
from bot.store import SqliteStore
from tests.factories import BASE_TIME, make_paper


async def test_round_trip_keeps_every_field(store: SqliteStore, clock: FakeClock) -> None:
    paper = make_paper(
        7,
        authors=(Author("Raimo Vuopionperä", ("SEFT, Univ. Helsinki", "CERN")), Author("Zoë Ødegård")),
        comment="12 pages, 3 figures",
        journal_ref="Phys. Rev. D 51 (1995)",
        doi="10.1103/PhysRevD.51.1",
        categories=("hep-ph", "hep-ex"),
        primary_category="hep-ph",
        authors_omitted=2_998,  # a collaboration whose long tail of authors was not kept
    )
    result = await store.papers.upsert([paper], seen_at=clock.now())
    assert result.new == [paper.arxiv_id]
    assert await store.papers.get(paper.arxiv_id) == paper


async def test_new_version_updates_row_and_keeps_first_seen(store: SqliteStore, clock: FakeClock) -> None:
    v1 = make_paper(1, title="Old title")
    await store.papers.upsert([v1], seen_at=clock.now())
    first_seen = await store.papers.first_seen(v1.arxiv_id)
    clock.advance(86400)
    v2 = make_paper(1, version=2, title="New title", updated=v1.published + timedelta(days=3))
    result = await store.papers.upsert([v2], seen_at=clock.now())
    assert (result.new, result.updated) == ([], [v1.arxiv_id])
    assert await store.papers.count() == 1
    assert (await store.papers.get(v1.arxiv_id)).title == "New title"  # type: ignore[union-attr]
    assert await store.papers.first_seen(v1.arxiv_id) == first_seen


async def test_older_or_same_version_changes_nothing(store: SqliteStore, clock: FakeClock) -> None:
    v2 = make_paper(1, version=2, title="Current")
    await store.papers.upsert([v2], seen_at=clock.now())
    result = await store.papers.upsert([make_paper(1, version=1, title="Stale"), v2], seen_at=clock.now())
    assert result.unchanged == 1 and not result.new and not result.updated
    assert (await store.papers.get(v2.arxiv_id)).title == "Current"  # type: ignore[union-attr]


@pytest.mark.sqlite_only  # reads papers_fts
async def test_fts_follows_inserts_and_updates(store: SqliteStore, clock: FakeClock) -> None:
    await store.papers.upsert(
        [make_paper(1, title="Speculative decoding with draft models")], seen_at=clock.now()
    )
    await store.papers.upsert(
        [make_paper(1, version=2, title="Medusa heads for faster inference")], seen_at=clock.now()
    )
    hits = await store.db.fetchall("SELECT rowid FROM papers_fts WHERE papers_fts MATCH ?", ('"medusa"',))
    stale = await store.db.fetchall(
        "SELECT rowid FROM papers_fts WHERE papers_fts MATCH ?", ('"speculative"',)
    )
    assert len(hits) == 1 and stale == []


async def test_category_counts_follow_new_versions(store: SqliteStore, clock: FakeClock) -> None:
    await store.papers.upsert([make_paper(1, categories=("cs.LG",)), make_paper(2)], seen_at=clock.now())
    start, end = BASE_TIME - timedelta(days=1), BASE_TIME
    assert await store.papers.count_in_categories(["cs.AI"], start, end) == 1
    assert await store.papers.count_in_categories(["cs.AI", "cs.LG"], start, end) == 2
    await store.papers.upsert([make_paper(1, version=2, categories=("cs.LG", "cs.AI"))], seen_at=clock.now())
    assert await store.papers.count_in_categories(["cs.AI"], start, end) == 2


@pytest.mark.sqlite_only  # reads papers_fts
async def test_failed_transaction_leaves_nothing(store: SqliteStore, clock: FakeClock) -> None:
    with pytest.raises(RuntimeError):
        async with store.transaction():
            await store.papers.upsert([make_paper(1), make_paper(2)], seen_at=clock.now())
            raise RuntimeError("crash between upsert and commit")
    assert await store.papers.count() == 0
    assert await store.db.fetchall("SELECT * FROM papers_fts WHERE papers_fts MATCH 'reinforcement'") == []


async def test_migrations_are_recorded_and_not_reapplied(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "db.sqlite3"
    store = await SqliteStore.open(path, clock)
    await store.papers.upsert([make_paper(1)], seen_at=clock.now())
    assert await store.db.migrate() == []
    await store.close()
    reopened = await SqliteStore.open(path, clock)
    assert await reopened.papers.count() == 1
    await reopened.close()
    with sqlite3.connect(path) as raw:
        versions = [row[0] for row in raw.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions[0] == 1 and versions == sorted(set(versions))
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_weekly_counts(store: SqliteStore, clock: FakeClock) -> None:
    papers = [
        make_paper(i, published=BASE_TIME - timedelta(days=i), categories=("cs.LG",)) for i in range(14)
    ]
    await store.papers.upsert(papers, seen_at=clock.now())
    weeks = await store.papers.weekly_category_counts(BASE_TIME - timedelta(days=30))
    assert sum(n for _, _, n in weeks) == 14
    assert all(cat == "cs.LG" for _, cat, _ in weeks)
    # BASE_TIME is Monday 2026-11-16: that day opens its own week
    assert ("2026-11-16", "cs.LG", 1) in weeks


async def test_new_version_never_moves_submission_date_later(store: SqliteStore, clock: FakeClock) -> None:
    v1 = make_paper(1)
    await store.papers.upsert([v1], seen_at=clock.now())
    # An RSS "replace" item knows only its announcement date.
    announced = v1.published + timedelta(days=9)
    await store.papers.upsert(
        [make_paper(1, version=2, published=announced, updated=announced)], seen_at=clock.now()
    )
    stored = await store.papers.get(v1.arxiv_id)
    assert stored is not None and stored.version == 2
    assert stored.published == v1.published


async def test_day_counts_cache_follows_every_change(store: SqliteStore, clock: FakeClock) -> None:
    midnight = BASE_TIME.replace(hour=0, minute=0)
    window = (midnight - timedelta(days=7), midnight + timedelta(days=1))
    papers = [
        make_paper(i, published=midnight - timedelta(hours=5 * i), categories=("cs.LG",)) for i in range(20)
    ]
    await store.papers.upsert(papers, seen_at=clock.now())

    async def both() -> tuple[int, int]:
        cached = await store.papers.count_in_categories(["cs.LG", "cs.AI"], *window)
        direct = await store.papers._count_distinct(
            ["cs.AI", "cs.LG"], int(window[0].timestamp()), int(window[1].timestamp())
        )
        return cached, direct

    assert await both() == (20, 20)
    assert await both() == (20, 20)  # now from the cache
    # a late paper for a day already counted
    late = make_paper(100, published=midnight - timedelta(hours=5), categories=("cs.AI",))
    await store.papers.upsert([late], seen_at=clock.now())
    assert await both() == (21, 21)
    # a new version crossing into cs.AI changes nothing; one leaving both categories does
    await store.papers.upsert(
        [make_paper(3, version=2, categories=("cs.LG", "cs.AI"), published=papers[3].published)],
        seen_at=clock.now(),
    )
    assert await both() == (21, 21)
    await store.papers.upsert(
        [make_paper(4, version=2, categories=("math.CO",), published=papers[4].published)],
        seen_at=clock.now(),
    )
    assert await both() == (20, 20)
    assert await store.papers.count_in_categories(["math.CO"], *window) == 1
    # a window that does not start at midnight is counted directly
    assert (
        await store.papers.count_in_categories(["cs.LG", "cs.AI"], window[0] + timedelta(hours=1), window[1])
        == 20
    )

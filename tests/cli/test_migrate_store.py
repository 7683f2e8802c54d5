"""`migrate-store`: a SQLite deployment filled through the bot's own code paths is copied into a throwaway
PostgreSQL database; the PostgreSQL store then answers as the SQLite one did, an interrupted copy resumes to the
same result, and a database holding another deployment is refused."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bot.cli import main
from bot.clock import FakeClock
from bot.models import Announcement, SkippedEntry
from bot.store import SqliteStore, Store
from bot.store.postgres import PostgresStore
from bot.store.postgres.from_sqlite import copy_deployment
from bot.topics.query import parse_query
from tests.cli.process import run_cli
from tests.factories import GRPO, ROBOT, make_paper
from tests.services.world import services_world

GUILD, CHANNEL, ALICE = 1, 11, 100
SECRET = "s3cret-pw"  # trust auth ignores it: it must never be printed all the same
TABLES = (
    "papers",
    "paper_categories",
    "topics",
    "topic_matches",
    "topic_history_pending",
    "follows",
    "deliveries",
    "announcements",
    "ratings",
    "saved_papers",
    "source_state",
    "backfill_windows",
    "skipped_entries",
)


async def migrate(source: Path | str, target: str, cwd: Path) -> tuple[int, str, str]:
    """`python -m bot migrate-store` as an operator runs it: (exit code, stdout, stderr)."""
    return await run_cli("migrate-store", "--from", str(source), "--to", target, env={}, cwd=cwd)


def with_password(url: str) -> str:
    return url.replace("postgres@", f"postgres:{SECRET}@")


async def fill(path: Path, clock: FakeClock) -> None:
    """A deployment with something in every table, written the way the bot writes it."""
    async with await SqliteStore.open(path, clock) as store, services_world(store, clock) as world:
        services = world.services
        await services.follows.follow(
            await services.follows.plan(GUILD, CHANNEL, "Bandits", query="ti:reinforcement")
        )
        papers = [make_paper(n, published=clock.now() - timedelta(days=n)) for n in range(3, 40)]
        await world.intake.store_papers([GRPO, ROBOT, *papers], announce=True)
        await world.intake.store_papers(
            [make_paper(3, version=2, title="Revised reinforcement learning")], announce=True
        )
        await services.ratings.rate(
            guild_id=GUILD, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id=papers[0].arxiv_id, vote=1
        )
        await services.saved.save(ALICE, papers[1].arxiv_id)
        await store.announcements.record(
            [Announcement(papers[0].arxiv_id, 1, "cs.LG", "new", date(2026, 11, 17))], clock.now()
        )
        await store.sources.record_failure("arxiv-api", clock.now(), "HTTP 503", papers=2)
        await store.backfill.plan(
            "backfill", [(clock.now() - timedelta(days=2), clock.now() - timedelta(days=1))]
        )
        await store.sources.record_skipped("arxiv-api", [SkippedEntry("oai:odd", "no id")], clock.now())
        topic = await services.topics.resolve(GUILD, "Bandits")
        await store.topics.queue_history([topic.id], clock.now())


async def answers(store: Store, clock: FakeClock) -> list[Any]:
    """What /search, /latest and /momentum answer from this store."""
    async with services_world(store, clock) as world:
        services = world.services
        topic = await services.topics.resolve(GUILD, "Bandits")
        found = await services.history.search(parse_query("reinforcement"), topic=topic, guild_id=GUILD)
        hits = [(h.paper, h.snippet) for h in found.hits]
        latest = await services.history.latest(topic, 10, GUILD)
        momentum = await services.momentum.topic(topic, 4, GUILD)
        pending = await store.deliveries.in_flight()
        return [
            hits,
            found.checked,
            found.complete,
            latest,
            momentum,
            await services.saved.everything(ALICE),
            pending,
        ]


async def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    conn = await asyncpg.connect(url)
    try:
        tables = {}
        for table in TABLES:
            rows = await conn.fetch(f"SELECT * FROM {table}")
            tables[table] = sorted(tuple(r.values()) for r in rows)
        return tables
    finally:
        await conn.close()


async def test_the_copy_answers_as_the_sqlite_store_did(tmp_path: Path, postgres_url: str) -> None:
    clock = FakeClock()
    path = tmp_path / "paperwatch.sqlite3"
    await fill(path, clock)
    async with await SqliteStore.open(path, clock) as sqlite:
        counts = {t: (await sqlite.db.fetchone(f"SELECT COUNT(*) FROM {t}"))[0] for t in TABLES}
    assert all(counts.values()), counts  # the deployment has something in every table

    code, out, err = await migrate(f"sqlite:///{path}", with_password(postgres_url), tmp_path)

    assert code == 0, err
    assert SECRET not in out + err
    assert f"papers {counts['papers']}/{counts['papers']}" in out
    for table in TABLES:
        assert f"{table}: {counts[table]} of {counts[table]} rows copied" in out
    async with await SqliteStore.open(path, clock) as sqlite:
        expected = await answers(sqlite, clock)
    async with await PostgresStore.open(postgres_url, clock) as postgres:
        assert await answers(postgres, clock) == expected
        # New rows continue after the copied ids.
        before = max(r[0] for r in (await dump(postgres_url))["topics"])
        created = await postgres.topics.create(
            guild_id=GUILD, name="After the copy", description="", query="ti:robots", at=clock.now()
        )
        assert created.id > before


async def test_an_interrupted_copy_resumes_to_what_one_run_copies(
    tmp_path: Path, postgres_cluster: Any
) -> None:
    clock = FakeClock()
    path = tmp_path / "paperwatch.sqlite3"
    await fill(path, clock)
    whole, halted = postgres_cluster.new_database(), postgres_cluster.new_database()
    assert (await migrate(path, whole, tmp_path))[0] == 0

    class Interrupted(Exception):
        pass

    seen: list[str] = []

    def interrupt_at_third_batch(line: str) -> None:
        seen.append(line)
        if len(seen) == 3:
            raise Interrupted

    async with (
        await SqliteStore.open(path, clock) as sqlite,
        await PostgresStore.open(halted, clock) as postgres,
    ):
        with pytest.raises(Interrupted):
            await copy_deployment(sqlite.db, postgres.db, report=interrupt_at_third_batch, batch=4)
        assert 0 < await postgres.papers.count() < await sqlite.papers.count()
    code, out, err = await migrate(f"sqlite:///{path}", halted, tmp_path)
    assert code == 0, err
    assert "resuming the copy" in out
    assert await dump(halted) == await dump(whole)
    # A third run adds nothing.
    code, out, err = await migrate(f"sqlite:///{path}", halted, tmp_path)
    assert code == 0 and "0 rows written by this run" in out, err
    assert await dump(halted) == await dump(whole)


async def test_a_database_holding_another_deployment_is_refused(tmp_path: Path, postgres_url: str) -> None:
    first, second = tmp_path / "first.sqlite3", tmp_path / "second.sqlite3"
    await fill(first, FakeClock())
    clock = FakeClock()
    clock.advance(3600)
    await fill(second, clock)
    assert (await migrate(f"sqlite:///{first}", postgres_url, tmp_path))[0] == 0
    before = await dump(postgres_url)

    code, _, err = await migrate(f"sqlite:///{second}", with_password(postgres_url), tmp_path)
    assert code == 2
    assert "already holds a copy of the SQLite store created" in err and "empty database" in err
    assert SECRET not in err
    assert await dump(postgres_url) == before


async def test_a_database_the_bot_already_used_is_refused(tmp_path: Path, postgres_url: str) -> None:
    path = tmp_path / "paperwatch.sqlite3"
    await fill(path, FakeClock())
    async with await PostgresStore.open(postgres_url) as postgres:
        await postgres.papers.upsert([make_paper(1)], seen_at=FakeClock().now())
    code, _, err = await migrate(f"sqlite:///{path}", postgres_url, tmp_path)
    assert code == 2
    assert "is not empty (its papers table has rows)" in err
    async with await PostgresStore.open(postgres_url) as postgres:
        assert await postgres.papers.count() == 1


def test_a_missing_sqlite_file_is_not_created(
    tmp_path: Path, cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.sqlite3"
    code = main(
        ["migrate-store", "--from", f"sqlite:///{missing}", "--to", "postgresql://u:pw@127.0.0.1:1/x"]
    )
    assert code == 2
    assert "no SQLite database at" in capsys.readouterr().err
    assert not missing.exists()

"""Moving a deployment from its SQLite file to PostgreSQL (`python -m bot migrate-store`): both stores are opened
(and migrated to the current schema) and every row is copied, resumably (bot/store/postgres/from_sqlite.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.errors import PaperwatchError
from bot.store import SqliteStore


@dataclass(frozen=True)
class Migrated:
    source: str  # the SQLite deployment, as the copy names it
    copied: dict[str, int]  # rows inserted by this run, per table
    resumed: bool  # an interrupted copy was continued


async def migrate_store(sqlite_path: Path, postgres_url: str, report: Callable[[str], None]) -> Migrated:
    """Copy the SQLite store at `sqlite_path` into the (empty, or partly copied) PostgreSQL database."""
    if not await asyncio.to_thread(sqlite_path.is_file):
        raise PaperwatchError(
            f"no SQLite database at {sqlite_path}: give the file DATABASE_PATH names (--from sqlite:///path)"
        )
    from bot.store.postgres import PostgresStore  # asyncpg loads only for PostgreSQL
    from bot.store.postgres.from_sqlite import copy_deployment

    async with (
        await SqliteStore.open(sqlite_path) as sqlite,
        await PostgresStore.open(postgres_url) as postgres,
    ):
        done = await copy_deployment(sqlite.db, postgres.db, report=report)
    return Migrated(done.source, done.copied, done.resumed)

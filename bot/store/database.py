"""SQLite connections, numbered migrations recorded in the database, and write transactions.

One writer connection (writes are serialised by a lock, one transaction at a time) and one reader connection:
with WAL, commands read committed data while ingest writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import aiosqlite

from bot.clock import Clock

log = logging.getLogger(__name__)
_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_in_transaction: contextvars.ContextVar[bool] = contextvars.ContextVar("in_transaction", default=False)


def bundled_migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every migration shipped in bot/store/migrations, in order."""
    found = []
    for entry in resources.files("bot.store").joinpath("migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    return found


def create_private(path: Path) -> None:
    """Create the database file (0600) and the folders missing above it (0700) before SQLite opens it: the
    file holds server, channel and member ids. SQLite gives its -wal and -shm files the database file's mode.
    Existing folders and files keep the modes their owner chose."""
    missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # created meanwhile by another process
            folder.mkdir(mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class Database:
    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self.clock = clock
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()

    async def open(self) -> None:
        if str(self.path) != ":memory:":
            create_private(self.path)
        self._writer = await self._connect()
        await self._writer.execute("PRAGMA journal_mode = WAL")
        await self.migrate()
        self._reader = await self._connect()

    async def _connect(self) -> aiosqlite.Connection:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a transaction spans exactly what we say.
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        conn.row_factory = aiosqlite.Row
        await conn.execute("PRAGMA foreign_keys = ON")
        await conn.execute("PRAGMA busy_timeout = 10000")
        await conn.execute("PRAGMA synchronous = NORMAL")  # durable at each checkpoint; safe with WAL
        await conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: FTS and index inserts stay in memory
        return conn

    async def close(self) -> None:
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None

    @property
    def writer(self) -> aiosqlite.Connection:
        if self._writer is None:
            raise RuntimeError("the store is not open")
        return self._writer

    @property
    def reader(self) -> aiosqlite.Connection:
        if self._reader is None:
            raise RuntimeError("the store is not open")
        return self._reader

    async def migrate(self) -> list[int]:
        """Apply every bundled migration not yet recorded in the database; return the versions applied."""
        db = self.writer
        await db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
        )
        async with db.execute("SELECT version FROM schema_migrations") as cur:
            done = {row[0] for row in await cur.fetchall()}
        applied = []
        for version, name, sql in bundled_migrations():
            if version in done:
                continue
            # executescript commits first, so the migration and its record go in one explicit transaction.
            await db.executescript(
                f"BEGIN;\n{sql}\nINSERT INTO schema_migrations (version, name, applied_at) "
                f"VALUES ({version}, '{name}', {int(self.clock.now().timestamp())});\nCOMMIT;"
            )
            log.info("applied migration %04d_%s", version, name)
            applied.append(version)
        return applied

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction; nested use joins the outer one. Rolled back on any exception."""
        if _in_transaction.get():
            yield self.writer
            return
        async with self._write_lock:
            token = _in_transaction.set(True)
            await self.writer.execute("BEGIN IMMEDIATE")
            try:
                yield self.writer
            except BaseException:
                await self.writer.execute("ROLLBACK")
                raise
            else:
                await self.writer.execute("COMMIT")
            finally:
                _in_transaction.reset(token)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[aiosqlite.Row]:
        """A read of committed data (the writer's own connection inside a transaction, to see its writes)."""
        conn = self.writer if _in_transaction.get() else self.reader
        async with conn.execute(sql, params) as cur:
            return list(await cur.fetchall())

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        async with self.transaction() as db:
            await db.execute(sql, params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        async with self.transaction() as db:
            await db.executemany(sql, rows)

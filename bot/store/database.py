"""SQLite connections, numbered migrations recorded in the database, and write transactions.

One writer connection (writes are serialised by a lock, one transaction at a time) and a pool of read-only
connections: with WAL, any number of readers see committed data while ingest writes, so one member's slow read
(a search over a million papers) never holds another member's answer. Each aiosqlite connection runs its
statements on its own thread, one at a time: a single shared reader would queue every command behind the slowest.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from bot.clock import Clock
from bot.errors import ReadTimedOut
from bot.store.sql import migrations_in

log = logging.getLogger(__name__)
_in_transaction: contextvars.ContextVar[bool] = contextvars.ContextVar("in_transaction", default=False)
READERS = 4  # read connections: concurrent commands beyond this wait for a free one, never for the writer
# Page cache per connection (KiB): what SQLite keeps of the file in the process's memory, for as long as the
# connection is open. The OS page cache holds the file anyway, so a page SQLite does not hold is a read from
# memory, not from the disk. At 1M papers, four 8 MiB reader caches filled within the first commands and stayed
# (32 MiB of the bot), and storing 10,000 papers filled the writer's 64 MiB for good. Measured side by side at
# 1M papers, no slower within the shared machine's noise: bench_million's commands with 2 MiB readers, storing
# 10,000 papers with a 16 MiB writer (README, "A million papers").
# No mmap_size: mapped pages of the file count in the process's resident memory as they are read.
WRITER_CACHE_KIB = 16_384
READER_CACHE_KIB = 2_048
# SQLite VM steps between two looks at a read's deadline: a few milliseconds of a long statement (measured at 1M
# papers: a look every 5-15 ms while FTS5 reads a common prefix's entries). FTS5 merges what it read in C without
# looking, so a statement may overrun its deadline by that merge: 0.12-0.35 s for a 0.12 s deadline, against the
# 12-15 s `dodo*` ran for (README, "A million papers").
PROGRESS_STEPS = 1_000


def bundled_migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every migration shipped in bot/store/migrations, in order."""
    return migrations_in("bot.store")


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


async def connect(path: Path, *, cache_kib: int, read_only: bool = False) -> aiosqlite.Connection:
    # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a transaction spans exactly what we say.
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = aiosqlite.Row
    await conn.execute("PRAGMA foreign_keys = ON")
    await conn.execute("PRAGMA busy_timeout = 10000")
    await conn.execute("PRAGMA synchronous = NORMAL")  # durable at each checkpoint; safe with WAL
    await conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
    if read_only:
        await conn.execute("PRAGMA query_only = ON")  # a write by mistake fails instead of racing the writer
    return conn


class Deadline:
    """When the statement a read connection runs must stop, if ever: read by the connection's progress handler on
    the connection's thread, set and cleared by the borrower on the event loop (plain attribute writes, so a
    cancelled borrower cannot leave one behind for the next)."""

    __slots__ = ("at", "clock")

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.at: float | None = None  # the clock's monotonic time

    def passed(self) -> int:
        """SQLite's progress handler: non-zero interrupts the statement."""
        at = self.at
        return 1 if at is not None and self.clock.monotonic() > at else 0


class ReadPool:
    """Read-only connections lent one per read: a read waits only when every connection is busy. A read with a
    deadline runs with a progress handler on its connection, which stops its statement once the deadline passes.

    The handler is there only while reads with a deadline need it (put in place by the first, taken away by the
    next read without one): it is a Python call every PROGRESS_STEPS steps of the statement, each taking the GIL on
    the connection's thread, so a long read waits for the event loop's thread at every one: a scan of the 1M-paper
    store with another thread busy in Python took 2.5x as long with the handler (`python bench/bench_read_handler.py`)."""

    def __init__(self) -> None:
        self._idle: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all: list[aiosqlite.Connection] = []
        self._deadlines: dict[aiosqlite.Connection, Deadline] = {}
        self._handled: set[aiosqlite.Connection] = set()  # those whose handler is (perhaps) in place

    async def open(self, path: Path, size: int, clock: Clock) -> None:
        for _ in range(size):
            conn = await connect(path, cache_kib=READER_CACHE_KIB, read_only=True)
            self._deadlines[conn] = Deadline(clock)
            self._all.append(conn)
            self._idle.put_nowait(conn)

    @property
    def connections(self) -> tuple[aiosqlite.Connection, ...]:
        return tuple(self._all)

    @asynccontextmanager
    async def connection(self, deadline: float | None = None) -> AsyncIterator[aiosqlite.Connection]:
        """A free connection, whose statements stop once the clock passes `deadline` (None: never)."""
        if not self._all:
            raise RuntimeError("the store is not open")
        conn = await self._idle.get()
        try:
            await self._handle(conn, deadline is not None)
            self._deadlines[conn].at = deadline
            yield conn
        finally:
            # Back even when the caller was cancelled mid-read: aiosqlite finishes that statement on the
            # connection's thread before it runs the next borrower's. Without the deadline: it was this read's.
            self._deadlines[conn].at = None
            self._idle.put_nowait(conn)

    async def _handle(self, conn: aiosqlite.Connection, wanted: bool) -> None:
        """Put the connection's progress handler in place, or take it away. Either call runs on the connection's
        thread before any statement of this read, even when the read is cancelled meanwhile: so the handler
        counts as in place from the moment it is asked for until its removal has run."""
        if wanted and conn not in self._handled:
            self._handled.add(conn)
            await conn.set_progress_handler(self._deadlines[conn].passed, PROGRESS_STEPS)
        elif not wanted and conn in self._handled:
            await conn.set_progress_handler(None, PROGRESS_STEPS)  # type: ignore[arg-type]  # sqlite3 takes None: no handler
            self._handled.discard(conn)

    async def close(self) -> None:
        for conn in self._all:
            await conn.close()
        self._all.clear()
        self._deadlines.clear()
        self._handled.clear()
        self._idle = asyncio.Queue()


class Database:
    def __init__(self, path: Path, clock: Clock, *, readers: int = READERS) -> None:
        if readers < 1:
            raise ValueError(f"a database needs at least one read connection (got {readers})")
        self.path = path
        self.clock = clock
        self.readers = readers
        self._writer: aiosqlite.Connection | None = None
        self._pool = ReadPool()
        self._write_lock = asyncio.Lock()

    async def open(self) -> None:
        if str(self.path) == ":memory:":
            # Each connection to ":memory:" is a database of its own: readers would never see the writes.
            raise ValueError("the store needs a database file; ':memory:' cannot be shared by connections")
        create_private(self.path)
        self._writer = await connect(self.path, cache_kib=WRITER_CACHE_KIB)
        await self._writer.execute("PRAGMA journal_mode = WAL")
        await self.migrate()
        await self._pool.open(self.path, self.readers, self.clock)

    async def close(self) -> None:
        await self._pool.close()
        if self._writer is not None:
            await self._writer.close()
        self._writer = None

    @property
    def writer(self) -> aiosqlite.Connection:
        if self._writer is None:
            raise RuntimeError("the store is not open")
        return self._writer

    def connections(self) -> tuple[aiosqlite.Connection, ...]:
        """Every open connection, the writer first (to trace statements, or add a function in a test)."""
        return (self.writer, *self._pool.connections)

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

    @property
    def writing(self) -> bool:
        """Another task holds the write transaction: a read that would only like to write may skip it."""
        return self._write_lock.locked() and not _in_transaction.get()

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

    async def fetchall(
        self, sql: str, params: Sequence[Any] = (), *, deadline: float | None = None
    ) -> list[aiosqlite.Row]:
        """A read of committed data on a free read connection (the writer's own connection inside a
        transaction, to see its writes). With a `deadline` (the clock's monotonic time), a read on a read
        connection is stopped inside SQLite once it passes, raising ReadTimedOut (so a search that cannot be
        ranked in time gives its connection back at once, not after seconds)."""
        if _in_transaction.get():
            async with self.writer.execute(sql, params) as cur:
                return list(await cur.fetchall())
        if deadline is not None and self.clock.monotonic() > deadline:
            raise ReadTimedOut()
        async with self._pool.connection(deadline) as conn:
            try:
                async with conn.execute(sql, params) as cur:
                    return list(await cur.fetchall())
            except sqlite3.OperationalError as exc:
                if deadline is not None and exc.sqlite_errorcode == sqlite3.SQLITE_INTERRUPT:
                    raise ReadTimedOut() from None
                raise

    async def fetchone(
        self, sql: str, params: Sequence[Any] = (), *, deadline: float | None = None
    ) -> aiosqlite.Row | None:
        rows = await self.fetchall(sql, params, deadline=deadline)
        return rows[0] if rows else None

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in a transaction (its own, or the one running); returns the rows it changed."""
        async with self.transaction() as db:
            cursor = await db.execute(sql, params)
            return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        async with self.transaction() as db:
            await db.executemany(sql, rows)

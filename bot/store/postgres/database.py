"""PostgreSQL connections (an asyncpg pool), numbered migrations recorded in the database, and transactions.

SQL is written with `?` placeholders, as in the SQLite store, and numbered ($1, $2, ...) here. Writes of one
process are serialised by a lock, as SQLite's are, so each repository method keeps the SQLite store's semantics;
a transaction's connection is found through a context variable, so nested use joins it.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import math
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any, TypeAlias
from urllib.parse import unquote, urlsplit

import asyncpg

from bot.clock import Clock
from bot.errors import ReadTimedOut, Unreachable
from bot.store.postgres.bulk import tsvectors_as_bytes
from bot.store.sql import migrations_in

log = logging.getLogger(__name__)
_MIGRATION_LOCK = 0x70617065  # advisory lock key: two processes starting at once migrate one after the other
_current: contextvars.ContextVar[asyncpg.Connection | None] = contextvars.ContextVar("pg_tx", default=None)
Row: TypeAlias = Any  # asyncpg.Record, read by name or position (asyncpg ships no types)
# The server went away (restarted, shut down, network): the statement's work is not done, and is retried later.
_LOST = (
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    ConnectionError,
    TimeoutError,
    # A pooled connection the restart cut mid-statement can be left in a broken protocol state ("cannot switch
    # to state 11; another operation is in progress"): it is lost too, and the pool drops it.
    asyncpg.InternalClientError,
)


def _server_lost(exc: BaseException) -> bool:
    """The server went away under `exc`: it is one of _LOST, or was raised while handling one. A transaction's
    rollback on the connection the server closed fails too (asyncpg's InterfaceError, "the underlying connection is
    closed"), and that error takes the first's place."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _LOST):
            return True
        seen = seen.__context__
    return False


def bundled_migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every migration in bot/store/postgres/migrations, in order."""
    return migrations_in("bot.store.postgres")


@lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """`?` placeholders as PostgreSQL's $1, $2, ... (the store's SQL holds no literal question mark)."""
    count = 0

    def next_mark(_: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"${count}"

    return re.sub(r"\?", next_mark, sql)


def describe(url: str) -> str:
    """Where a URL points, fit to show: host, port and database, never the user's password."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "localhost", parts.port or 5432
    except ValueError:
        return "database DATABASE_URL names (it is not a readable address)"
    database = unquote(parts.path.lstrip("/")) or "(the user's default database)"
    return f"database {database!r} on {host}:{port}"


def _scrubbed(text: str, url: str) -> str:
    """`text` without the URL's password, read without parsing (an unreadable URL may still hold one)."""
    authority = url.partition("://")[2].partition("/")[0]
    password = authority.rpartition("@")[0].partition(":")[2]
    for secret in filter(None, {password, unquote(password)}):
        text = text.replace(secret, "***")
    return text


class Database:
    def __init__(self, url: str, clock: Clock) -> None:
        self.url = url
        self.clock = clock
        self._pool: asyncpg.Pool | None = None
        self._write_lock = asyncio.Lock()

    async def open(self) -> None:
        """Connect and migrate. An unreachable server or a wrong URL raises Unreachable in one line that names
        the host and database (never the password)."""
        try:
            self._pool = await asyncpg.create_pool(
                self.url, min_size=1, max_size=8, timeout=30, init=tsvectors_as_bytes
            )
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, ValueError) as exc:
            reason = _scrubbed(str(exc) or type(exc).__name__, self.url).splitlines()[0]
            raise Unreachable(
                f"could not open the PostgreSQL {describe(self.url)}: {reason}. Check DATABASE_URL (and that "
                "the server runs and the database exists), then run again"
            ) from None
        try:
            await self.migrate()
        except asyncpg.PostgresError as exc:  # e.g. a user who may not create tables
            await self.close()
            reason = _scrubbed(str(exc), self.url).splitlines()[0]
            raise Unreachable(
                f"could not create paperwatch's tables in the PostgreSQL {describe(self.url)}: {reason}. "
                "Give the user of DATABASE_URL the right to create tables in it, then run again"
            ) from None

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("the store is not open")
        return self._pool

    async def migrate(self) -> list[int]:
        """Apply every bundled migration not yet recorded in the database; return the versions applied."""
        applied = []
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
            )
            done = {r[0] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for version, name, sql in bundled_migrations():
                if version in done:
                    continue
                await conn.execute(sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                    version,
                    name,
                    int(self.clock.now().timestamp()),
                )
                log.info("applied PostgreSQL migration %04d_%s", version, name)
                applied.append(version)
        return applied

    @asynccontextmanager
    async def _reconnecting(self) -> AsyncIterator[None]:
        """A lost server becomes Unreachable (one line, retried by the caller's next round); the pool drops
        every connection it holds, so the next statement runs on a new one instead of failing on each stale
        connection in turn."""
        try:
            yield
        except Exception as exc:
            if not _server_lost(exc):
                raise
            if self._pool is not None:
                await self._pool.expire_connections()
            reason = _scrubbed(str(exc) or type(exc).__name__, self.url).splitlines()[0]
            raise Unreachable(
                f"lost the connection to the PostgreSQL {describe(self.url)} ({reason}); the "
                "interrupted work runs again once the server answers"
            ) from exc

    @property
    def writing(self) -> bool:
        """Another task holds the write transaction: a read that would only like to write may skip it."""
        return self._write_lock.locked() and _current.get() is None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """One write transaction; nested use joins the outer one. Rolled back on any exception."""
        joined = _current.get()
        if joined is not None:
            yield joined
            return
        async with self._reconnecting(), self._write_lock, self.pool.acquire() as conn, conn.transaction():
            token = _current.set(conn)
            try:
                yield conn
            finally:
                _current.reset(token)

    async def fetchall(
        self, sql: str, params: Sequence[Any] = (), *, deadline: float | None = None
    ) -> list[Row]:
        """A read of committed data (the transaction's own connection inside one, to see its writes). With a
        `deadline` (the clock's monotonic time), the server stops the statement once it passes (its
        statement_timeout, set for this read's transaction only), raising ReadTimedOut."""
        conn = _current.get()
        if conn is not None:
            return list(await conn.fetch(numbered(sql), *params))
        if deadline is None:
            async with self._reconnecting():
                return list(await self.pool.fetch(numbered(sql), *params))
        left = deadline - self.clock.monotonic()
        if left <= 0:
            raise ReadTimedOut()
        async with self._reconnecting(), self.pool.acquire() as conn, conn.transaction(readonly=True):
            # SET LOCAL: gone with the transaction, so the connection goes back to the pool without it.
            await conn.execute(f"SET LOCAL statement_timeout = {max(1, math.ceil(left * 1000))}")
            try:
                return list(await conn.fetch(numbered(sql), *params))
            except asyncpg.QueryCanceledError:
                raise ReadTimedOut() from None

    async def fetchone(
        self, sql: str, params: Sequence[Any] = (), *, deadline: float | None = None
    ) -> Row | None:
        rows = await self.fetchall(sql, params, deadline=deadline)
        return rows[0] if rows else None

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in a transaction (its own, or the one running); returns the rows it changed."""
        async with self.transaction() as conn:
            status = await conn.execute(numbered(sql), *params)
        return changed(status)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        async with self.transaction() as conn:
            await conn.executemany(numbered(sql), rows)


class AdvisoryLock:
    """A session-level advisory lock (`pg_try_advisory_lock`) on a connection of its own, outside the pool:
    PostgreSQL frees it when that session ends (the holder died, or the server restarted), and another process
    takes it. A holder checks its session before relying on it, and takes the lock again once it is free."""

    def __init__(self, url: str, name: str, key: int | None = None) -> None:
        self.url = url
        self.name = name
        # `key` when others must find the lock from SQL (pg_locks), e.g. a deliver worker's liveness
        self.key = (
            key
            if key is not None
            else int.from_bytes(
                hashlib.blake2b(f"paperwatch:{name}".encode(), digest_size=8).digest(), "big", signed=True
            )
        )
        self._conn: asyncpg.Connection | None = None
        # Checks made at once (the poll job and the lock watch) take turns: a connection runs one statement at a
        # time, and a check refused as "busy" would take a healthy session for a lost one.
        self._checking = asyncio.Lock()

    async def try_acquire(self) -> bool:
        async with self._checking:
            return await self._try_acquire()

    async def _try_acquire(self) -> bool:
        # Any error of the check counts as a lost session, and any error taking the lock as "not now": a server
        # going away mid-statement raises more than the network's and the server's errors (asyncpg's client
        # errors too: "cannot switch to state 11; another operation is in progress"), and the scheduler's lock
        # watch must answer True or False whatever happened, not end in a traceback.
        if self._conn is not None:
            try:
                await self._conn.fetchval("SELECT 1", timeout=10)
                return True
            except Exception:
                log.warning(
                    "the database session holding the %s lock ended; taking the lock again", self.name
                )
                gone, self._conn = self._conn, None
                gone.terminate()
        try:
            conn = await asyncpg.connect(self.url, timeout=10)
        except Exception:
            return False  # the server is away (restarting): tried again later
        try:
            if await conn.fetchval("SELECT pg_try_advisory_lock($1)", self.key, timeout=10):
                self._conn = conn
                return True
        except Exception:
            pass
        conn.terminate()
        return False

    async def release(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                await conn.close(timeout=5)  # the session ends: the lock is free
            except Exception:
                conn.terminate()


def changed(status: str) -> int:
    """Rows a statement changed, from its status ("UPDATE 3", "INSERT 0 2", "DELETE 1")."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0

"""The only code that speaks SQL. `Store` is what callers depend on; `open_store` opens the implementation.

The records the store returns live in bot.models; they are re-exported here under their old names until every
import points there.
"""

from __future__ import annotations

from pathlib import Path

from bot.clock import Clock
from bot.models import (
    BackfillWindow,
    Follow,
    Mode,
    PendingDelivery,
    SearchHit,
    SourceState,
    TopicRow,
    Wanted,
)
from bot.store.protocol import Store
from bot.store.sqlite import SqliteStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def postgres_url(where: Path | str) -> str | None:
    """`where` when it is a PostgreSQL URL (else None: a SQLite file's path)."""
    return where if isinstance(where, str) and where.startswith(POSTGRES_SCHEMES) else None


__all__ = [
    "BackfillWindow",
    "Follow",
    "Mode",
    "PendingDelivery",
    "SearchHit",
    "SourceState",
    "SqliteStore",
    "Store",
    "TopicRow",
    "Wanted",
    "open_store",
]


async def open_store(where: Path | str, clock: Clock | None = None) -> Store:
    """The store of a database, opened and migrated: a `postgresql://` URL opens the PostgreSQL store (raising
    Unreachable, in one line without the password, when it cannot), anything else is the SQLite file at that
    path (created when missing).

    Returning each store as `Store` is also the static check that it implements the protocol."""
    url = postgres_url(where)
    if url is not None:
        from bot.store.postgres import PostgresStore  # asyncpg loads only for PostgreSQL

        return await PostgresStore.open(url, clock)
    return await SqliteStore.open(where, clock)

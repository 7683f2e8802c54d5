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


async def open_store(path: Path | str, clock: Clock | None = None) -> Store:
    """The store of a database, opened and migrated: today the SQLite file at `path` (created when missing).

    Returning the SQLite store as `Store` is also the static check that it implements the protocol."""
    return await SqliteStore.open(path, clock)

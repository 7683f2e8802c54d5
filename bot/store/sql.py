"""What a repository written in SQL both engines run needs of its database: SQLite's `Database`
(bot/store/database.py) and PostgreSQL's (bot/store/postgres/database.py) both take `?` placeholders, join an open
`transaction()` from their write methods, and return rows read by position or by name."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol


class SqlDatabase(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[object]: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> object: ...

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

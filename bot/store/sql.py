"""What a repository written in SQL both engines run needs of its database: SQLite's `Database`
(bot/store/database.py) and PostgreSQL's (bot/store/postgres/database.py) both take `?` placeholders, join an open
`transaction()` from their write methods, return rows read by position or by name, and say how many rows a
statement changed (`execute`).

The SQL both run: ON CONFLICT (...) DO NOTHING / DO UPDATE with its target (never INSERT OR IGNORE), lists as
`IN (?, ?, ...)` (`marks`; never `IN ()`, which PostgreSQL refuses), counts of a condition as SUM(CASE ...),
and ordering by ASCII-folded names in Python (`ascii_folded`), as SQLite's NOCASE folds them."""

from __future__ import annotations

import re
from collections.abc import Sequence, Sized
from contextlib import AbstractAsyncContextManager
from importlib import resources
from typing import Any, Protocol

_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class SqlDatabase(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[object]: ...

    @property
    def writing(self) -> bool:
        """Another task holds the write transaction (a read that would only like to write may skip it)."""
        ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...


# What a Paper is read from (bot/store/papers.py paper_from_row), "p" being the papers table: on both engines,
# never PostgreSQL's indexed words.
PAPER_COLUMNS = (
    "p.pk, p.arxiv_id, p.version, p.title, p.abstract, p.authors_json, p.primary_category, p.categories,"
    " p.published, p.updated, p.comment, p.journal_ref, p.doi, p.authors_omitted, p.provisional"
)


def marks(values: Sized) -> str:
    """The placeholders of an `IN (...)` list of these values (at least one: the caller handles none)."""
    if not len(values):
        raise ValueError("an IN list needs at least one value")
    return ", ".join("?" * len(values))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_folded(text: str) -> str:
    """SQLite's NOCASE: ASCII letters folded, nothing else."""
    return text.translate(_ASCII_LOWER)


def migrations_in(package: str) -> list[tuple[int, str, str]]:
    """(version, name, sql) for every numbered migration (`0001_name.sql`) in the package's `migrations` folder,
    in order; two sharing a number is a packaging mistake, refused."""
    found = []
    for entry in resources.files(package).joinpath("migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    return found

"""Copy a SQLite deployment into an empty PostgreSQL database (`python -m bot migrate-store`).

Every table both schemas hold is copied in key order, a batch per transaction, together with the position it
reached (store_copy_positions): an interrupted copy resumes after the last committed batch, and ON CONFLICT DO
NOTHING makes a batch committed twice harmless. Papers get the words SQLite's FTS5 index holds (tokens.py), from
which PostgreSQL builds their tsvector. Ids are copied as they are (follows, deliveries and cards refer to them),
and each id sequence then continues after the largest. A database holding anything else is refused.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.errors import PaperwatchError
from bot.store.database import Database as SqliteDatabase
from bot.store.postgres.bulk import insert_copied
from bot.store.postgres.database import Database as PostgresDatabase
from bot.store.postgres.database import describe
from bot.store.postgres.tokens import tsvectors

BATCH = 5_000
# Not copied: each database's own migration record, the copy's own bookkeeping, and a cache PostgreSQL rebuilds
# on first read (category_day_counts: per-day counts, forgotten whenever a paper of that day changes).
SKIPPED = frozenset({"schema_migrations", "store_copies", "store_copy_positions", "category_day_counts"})
WORDS = ("words",)  # papers' tsvector of the words FTS5 indexes
Report = Callable[[str], None]


class TargetInUse(PaperwatchError):
    """The PostgreSQL database holds data that is not (part of) a copy of this SQLite deployment."""


@dataclass
class Table:
    name: str
    columns: list[str]  # read from SQLite, in this order
    key: list[str]  # SQLite's primary key: the copy's order and position
    serial: list[str] = field(default_factory=list)  # PostgreSQL columns numbered by a sequence


@dataclass
class CopyReport:
    source: str
    copied: dict[str, int] = field(default_factory=dict)  # rows inserted by this run, per table
    resumed: bool = False


async def copy_deployment(
    sqlite: SqliteDatabase, postgres: PostgresDatabase, *, report: Report, batch: int = BATCH
) -> CopyReport:
    """Copy every row of `sqlite` into `postgres` (both open and migrated); resumable, see the module."""
    source = await _source_name(sqlite)
    tables = await _tables(sqlite, postgres)
    result = CopyReport(source, resumed=await _claim(postgres, source, tables))
    if result.resumed:
        report(f"resuming the copy of {source} into {describe(postgres.url)}")
    for table in tables:
        result.copied[table.name] = await _copy_table(sqlite, postgres, source, table, report, batch)
    async with postgres.transaction() as conn:
        for table in tables:
            for column in table.serial:
                await conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', '{column}'),"
                    f" COALESCE((SELECT MAX({column}) FROM {table.name}), 0) + 1, false)"
                )
        await conn.execute(
            "UPDATE store_copies SET finished_at = $1 WHERE source = $2",
            int(datetime.now(UTC).timestamp()),
            source,
        )
    return result


async def _source_name(sqlite: SqliteDatabase) -> str:
    """The SQLite deployment, named by when its first migration ran (it never changes, whatever its path)."""
    row = await sqlite.fetchone("SELECT applied_at FROM schema_migrations ORDER BY version LIMIT 1")
    created = datetime.fromtimestamp(row[0] if row else 0, UTC)
    return f"the SQLite store created {created:%Y-%m-%d %H:%M:%S} UTC"


async def _tables(sqlite: SqliteDatabase, postgres: PostgresDatabase) -> list[Table]:
    """The tables both hold, parents before the tables that refer to them."""
    names = [
        r[0]
        for r in await sqlite.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts_%' ORDER BY name"
        )
    ]
    target: dict[str, dict[str, str | None]] = {}
    for r in await postgres.fetchall(
        "SELECT table_name, column_name, column_default FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_generated = 'NEVER' ORDER BY ordinal_position"
    ):
        target.setdefault(r[0], {})[r[1]] = r[2]
    parents: dict[str, set[str]] = {}
    for child, parent in await postgres.fetchall(
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint WHERE contype = 'f'"
    ):
        parents.setdefault(child, set()).add(parent)
    tables = []
    for name in names:
        if name in SKIPPED or name not in target:
            continue
        info = await sqlite.fetchall(f"PRAGMA table_info({name})")
        columns = [r["name"] for r in info if r["name"] in target[name]]
        key = [r["name"] for r in sorted(info, key=lambda r: r["pk"]) if r["pk"]] or ["rowid"]
        serial = [c for c, default in target[name].items() if (default or "").startswith("nextval(")]
        tables.append(Table(name, columns, key, serial))
    return _parents_first(tables, parents)


def _parents_first(tables: list[Table], parents: dict[str, set[str]]) -> list[Table]:
    by_name = {t.name: t for t in tables}
    ordered: list[Table] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in by_name:
            return
        seen.add(name)
        for parent in sorted(parents.get(name, ())):
            visit(parent)
        ordered.append(by_name[name])

    for table in tables:
        visit(table.name)
    return ordered


async def _claim(postgres: PostgresDatabase, source: str, tables: Sequence[Table]) -> bool:
    """Record that `postgres` is a copy of `source`; True when an earlier run of this copy is resumed. Refuses
    a database that holds a copy of another deployment, or any data of its own."""
    async with postgres.transaction() as conn:
        await conn.execute(
            "LOCK TABLE store_copies"
        )  # two copies started at once: the second waits, then sees
        earlier = [r[0] for r in await conn.fetch("SELECT source FROM store_copies")]
        if earlier == [source]:
            return True
        where = describe(postgres.url)
        if earlier:
            raise TargetInUse(
                f"the PostgreSQL {where} already holds a copy of {earlier[0]}, not of {source} (the one given): "
                "copy into a new, empty database (createdb), or give the SQLite file that was copied there"
            )
        for table in tables:
            if await conn.fetchval(f"SELECT EXISTS (SELECT 1 FROM {table.name})"):
                raise TargetInUse(
                    f"the PostgreSQL {where} is not empty (its {table.name} table has rows): it holds another "
                    "deployment, which a copy would mix with this one. Copy into a new, empty database (createdb)"
                )
        await conn.execute(
            "INSERT INTO store_copies (source, started_at) VALUES ($1, $2)",
            source,
            int(datetime.now(UTC).timestamp()),
        )
        return False


async def _copy_table(
    sqlite: SqliteDatabase, postgres: PostgresDatabase, source: str, table: Table, report: Report, batch: int
) -> int:
    total_row = await sqlite.fetchone(f"SELECT COUNT(*) FROM {table.name}")
    total = int(total_row[0]) if total_row else 0
    position = await postgres.fetchone(
        "SELECT last_key, copied FROM store_copy_positions WHERE source = ? AND table_name = ?",
        (source, table.name),
    )
    last: list[Any] | None = json.loads(position[0]) if position else None
    done = int(position[1]) if position else 0
    inserted = 0
    keys = ", ".join(table.key)
    read = ", ".join([*table.key, *table.columns])
    columns = [*table.columns, *(WORDS if table.name == "papers" else ())]
    while True:
        after = f"WHERE ({keys}) > ({', '.join('?' * len(table.key))})" if last is not None else ""
        rows = await sqlite.fetchall(
            f"SELECT {read} FROM {table.name} {after} ORDER BY {keys} LIMIT ?", (*(last or ()), batch)
        )
        if not rows:
            break
        width = len(table.key)
        values = [tuple(r)[width:] for r in rows]
        if table.name == "papers":
            values = await _with_words(table.columns, values)
        elif table.name == "deliveries":
            values = _with_topic_array(table.columns, values)
        last = list(tuple(rows[-1])[:width])
        async with postgres.transaction() as conn:
            inserted += await insert_copied(conn, table.name, columns, values)
            await conn.execute(
                "INSERT INTO store_copy_positions (source, table_name, last_key, copied) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (source, table_name) DO UPDATE SET last_key = excluded.last_key,"
                " copied = excluded.copied",
                source,
                table.name,
                json.dumps(last),
                done + len(rows),
            )
        done += len(rows)
        if table.name == "papers":
            report(f"papers {done:,}/{total:,}")
    report(
        f"{table.name}: {done:,} of {total:,} rows copied"
        + (f" ({inserted:,} by this run)" if inserted != done else "")
    )
    return inserted


def _with_topic_array(columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The outbox's rows with their topic ids as PostgreSQL's array (SQLite holds them as a JSON array)."""
    at = columns.index("topic_ids")
    return [(*r[:at], json.loads(r[at]), *r[at + 1 :]) for r in rows]


async def _with_words(columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Papers' rows with the tsvector of the words FTS5 indexes in their title, abstract and authors."""
    at = [columns.index(c) for c in ("title", "abstract", "authors")]
    fields = [(r[at[0]], r[at[1]], r[at[2]]) for r in rows]
    words = await asyncio.to_thread(tsvectors, fields)
    return [(*r, w) for r, w in zip(rows, words, strict=True)]

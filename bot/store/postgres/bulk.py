"""Bulk writes on PostgreSQL: rows go in by COPY (asyncpg's binary copy) into a temporary staging table of the
same column types, then into their table with one INSERT ... SELECT, so a batch keeps the table's constraints and
its ON CONFLICT rule while costing one round trip instead of one per row."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, Iterable, Sequence
from typing import Any

import asyncpg


def staging_name(table: str, columns: Sequence[str]) -> str:
    """One staging table per (table, columns) and connection, emptied at each commit."""
    digest = hashlib.sha1(" ".join(columns).encode()).hexdigest()[:10]
    return f"staging_{table}_{digest}"


async def stage(
    conn: asyncpg.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> str:
    """COPY `rows` into the staging table of `table`'s `columns` (inside the caller's transaction); its name."""
    staging = staging_name(table, columns)
    names = ", ".join(columns)
    await conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {staging} ON COMMIT DELETE ROWS AS"
        f" SELECT {names} FROM {table} WITH NO DATA"
    )
    await conn.execute(f"TRUNCATE {staging}")  # a second batch of the same transaction starts empty
    await copy_in(conn, staging, columns, rows)
    return staging


async def copy_in(
    conn: asyncpg.Connection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]] | AsyncIterable[Sequence[Any]],
) -> None:
    """COPY `rows` into `table` (binary; a tsvector given as bytes in PostgreSQL's binary form: see
    `tsvectors_as_bytes`). Rows given as an async iterable are sent as they come (about every 512 kB), so
    PostgreSQL works on them as the rest is made."""
    await conn.copy_records_to_table(table, records=rows, columns=list(columns))


async def tsvectors_as_bytes(conn: asyncpg.Connection) -> None:
    """Pass tsvectors to and from `conn` as bytes in PostgreSQL's binary form (asyncpg has no tsvector codec, and
    COPY's binary format needs one). Set once per connection (the pool's `init`): setting and resetting it around
    each COPY, as before, made asyncpg forget the connection's prepared statements twice a page."""
    await conn.set_type_codec("tsvector", schema="pg_catalog", encoder=bytes, decoder=bytes, format="binary")


async def insert_copied(
    conn: asyncpg.Connection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    conflict: str = "ON CONFLICT DO NOTHING",
) -> int:
    """Insert `rows` into `table` through a staging table, each under `conflict`; the rows inserted."""
    if not rows:
        return 0
    staging = await stage(conn, table, columns, rows)
    names = ", ".join(columns)
    status = await conn.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {staging} {conflict}")
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0

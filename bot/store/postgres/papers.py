"""Paper rows on PostgreSQL: batched upserts that keep first-seen times, lookups, per-category counts.

The rules (which copy is newer, what a row holds) are the SQLite store's (bot/store/papers.py), shared."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from bot.models import Paper, UpsertResult
from bot.store.announcements import _RANK, headline_from
from bot.store.papers import DAY, Stored, _is_newer, _paper_values, _stored, from_ts, paper_from_row, to_ts
from bot.store.postgres.bulk import copy_in, stage
from bot.store.postgres.database import Database, Row
from bot.store.postgres.tokens import tsvectors
from bot.store.sql import PAPER_COLUMNS

# The announcement a card shows for the stored version (see bot/store/announcements.py HEADLINE).
HEADLINE = (
    "(SELECT a.kind || chr(31) || a.category || chr(31) || a.day FROM announcements a"
    f" WHERE a.paper_pk = p.pk AND a.version = p.version ORDER BY CASE a.kind {_RANK} END, a.category"
    " LIMIT 1) AS announced"
)
# What a Paper is read from (not the indexed words): "p" is the papers table.
PAPER = PAPER_COLUMNS
_COLUMNS = (
    "arxiv_id, version, title, abstract, authors, authors_json, primary_category, categories, "
    "published, updated, comment, journal_ref, doi, authors_omitted, provisional, words"
)
_WRITTEN = [*_COLUMNS.split(", "), "first_seen", "last_changed"]  # what a batch copies into its staging table
_SET = ", ".join(
    f"{c} = LEAST(p.{c}, s.{c})" if c == "published" else f"{c} = s.{c}"  # published keeps the earliest
    for c in _WRITTEN
    if c not in ("arxiv_id", "first_seen")  # first_seen is kept across versions
)
# A batch's categories, from the rows just written (categories is space-joined, primary first).
_LINK_CATEGORIES = (
    "INSERT INTO paper_categories (category, published, paper_pk)"
    " SELECT DISTINCT c, p.published, p.pk FROM papers p, unnest(string_to_array(p.categories, ' ')) AS c"
    " WHERE p.arxiv_id = ANY($1::text[]) ON CONFLICT DO NOTHING"
)


def paper(row: Row, *, headline: bool = False) -> Paper:
    """A paper from a row of papers (with HEADLINE's `announced` when `headline`)."""
    record: Any = row  # asyncpg's Record reads by name like sqlite's Row
    return paper_from_row(record, headline_from(record, row["arxiv_id"]) if headline else None)


def paper_filter(
    *,
    topic_id: int | None = None,
    including: Sequence[int] = (),
    categories: Sequence[str] = (),
    since: datetime | None = None,
    suggested: bool = False,
) -> tuple[str, list[object]]:
    """SQL conditions on papers aliased `p` (" AND ..." each, or ""): see bot/store/papers.py paper_filter."""
    clauses: list[str] = []
    params: list[object] = []
    if topic_id is not None:
        clauses.append(
            "p.pk IN (SELECT paper_pk FROM topic_matches WHERE topic_id = ANY(?::bigint[])"
            + ("" if suggested else " AND kind = 'exact'")
            + ")"
        )
        params.append([topic_id, *including])
    if categories:
        clauses.append("p.pk IN (SELECT paper_pk FROM paper_categories WHERE category = ANY(?::text[]))")
        params.append(list(categories))
    if since is not None:
        clauses.append("p.published >= ?")
        params.append(to_ts(since))
    return "".join(f" AND {c}" for c in clauses), params


CHUNK = 250  # papers whose tsvectors are built at once (about 20 ms) while the chunks before are copied in


async def _rows(
    papers: Sequence[Paper], now: int, pks: Sequence[int] = ()
) -> AsyncIterator[tuple[object, ...]]:
    """The papers' rows (`_WRITTEN`, after their `pks` when given), their tsvectors built a chunk at a time (one
    after the other, building them and PostgreSQL's COPY each took about half of an ingest). Fed to a COPY,
    which sends rows as they come, PostgreSQL takes in a chunk while the next is built: it runs beside this
    process, on another core when there is one free. Built in this thread, 20 ms at a time: in a thread of their
    own they would vie with this one (encoding the rows) for the GIL."""
    for start in range(0, len(papers), CHUNK):
        chunk = papers[start : start + CHUNK]
        words = tsvectors([(p.title, p.abstract, ", ".join(a.name for a in p.authors)) for p in chunk])
        for at, (paper, tsvector) in enumerate(zip(chunk, words, strict=True), start):
            values = (*_paper_values(paper), tsvector, now, now)
            yield (pks[at], *values) if pks else values
        await asyncio.sleep(0)


# New papers get their keys first, so that their categories are copied in too: looking them up by arxiv_id to link
# them (_LINK_CATEGORIES) took a fifth of an ingest.
_NEXT_PKS = "SELECT nextval(pg_get_serial_sequence('papers', 'pk')) FROM generate_series(1, $1)"
_CATEGORY_COLUMNS = ("category", "published", "paper_pk")


async def _insert_new(conn: asyncpg.Connection, papers: Sequence[Paper], now: int) -> None:
    """Insert papers read as not stored, and link their categories: each by COPY straight into its table, or,
    when another process stored one of them meanwhile, through a staging table that skips those (ON CONFLICT DO
    NOTHING, as one row at a time)."""
    pks = [r[0] for r in await conn.fetch(_NEXT_PKS, len(papers))]
    rows: list[tuple[object, ...]] = []

    async def kept() -> AsyncIterator[tuple[object, ...]]:
        async for row in _rows(papers, now, pks):
            rows.append(row)
            yield row

    try:
        async with conn.transaction():  # a savepoint: a conflict undoes these COPYs only
            await copy_in(conn, "papers", ["pk", *_WRITTEN], kept())
            categories = [
                (category, to_ts(paper.published), pk)
                for paper, pk in zip(papers, pks, strict=True)
                for category in dict.fromkeys(paper.categories)
            ]
            await copy_in(conn, "paper_categories", _CATEGORY_COLUMNS, categories)
    except asyncpg.UniqueViolationError:
        rows.extend([row async for row in _rows(papers[len(rows) :], now, pks[len(rows) :])])
        staging = await stage(conn, "papers", ["pk", *_WRITTEN], rows)
        columns = ", ".join(["pk", *_WRITTEN])
        await conn.execute(
            f"INSERT INTO papers ({columns}) SELECT {columns} FROM {staging} ON CONFLICT (arxiv_id) DO NOTHING"
        )
        await conn.execute(_LINK_CATEGORIES, [p.arxiv_id for p in papers])


class PaperRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def stored_versions(self, arxiv_ids: Sequence[str]) -> dict[str, Stored]:
        rows = await self.db.fetchall(
            "SELECT arxiv_id, version, provisional, updated FROM papers WHERE arxiv_id = ANY(?::text[])",
            (list(dict.fromkeys(arxiv_ids)),),
        )
        return {r["arxiv_id"]: (r["version"], bool(r["provisional"]), r["updated"]) for r in rows}

    async def stored_ids(self, arxiv_ids: Sequence[str]) -> set[str]:
        return set(await self.stored_versions(arxiv_ids))

    async def provisional(self, *, since: datetime, limit: int) -> list[str]:
        rows = await self.db.fetchall(
            "SELECT arxiv_id FROM papers WHERE provisional = 1 AND last_changed >= ?"
            " ORDER BY last_changed, pk LIMIT ?",
            (to_ts(since), limit),
        )
        return [r[0] for r in rows]

    async def upsert(self, papers: Iterable[Paper], *, seen_at: datetime) -> UpsertResult:
        latest: dict[str, Paper] = {}
        for item in papers:
            held = latest.get(item.arxiv_id)
            if held is None or _is_newer(item, _stored(held)):
                latest[item.arxiv_id] = item
        if not latest:
            return UpsertResult()
        now = to_ts(seen_at)
        async with self.db.transaction():
            stored = await self.stored_versions(list(latest))
            new = [p for aid, p in latest.items() if aid not in stored]
            changed = [p for aid, p in latest.items() if aid in stored and _is_newer(p, stored[aid])]
            await self._write(new, changed, now)
        return UpsertResult(
            new=[p.arxiv_id for p in new],
            updated=[p.arxiv_id for p in changed],
            unchanged=len(latest) - len(new) - len(changed),
        )

    async def _write(self, new: Sequence[Paper], changed: Sequence[Paper], now: int) -> None:
        """Insert the new papers (`_insert_new`) and update the changed ones (in the running transaction): copied
        into a staging table (COPY) and written by one statement, then their categories linked again."""
        async with self.db.transaction() as conn:
            # An insert that finds the `words` index's pending list full (migration 0008) merges it, sorting with
            # work_mem: 4 MB split a full list's merge into many passes over the index (until the commit).
            await conn.execute("SET LOCAL work_mem = '64MB'")
            if new:
                await _insert_new(conn, new, now)
            if changed:
                rows = [row async for row in _rows(changed, now)]
                staging = await stage(conn, "papers", _WRITTEN, rows)
                await conn.execute(
                    f"UPDATE papers p SET {_SET} FROM {staging} s WHERE p.arxiv_id = s.arxiv_id"
                )
                await conn.execute(
                    "DELETE FROM paper_categories WHERE paper_pk IN"
                    f" (SELECT p.pk FROM papers p JOIN {staging} s USING (arxiv_id))"
                )
                await conn.execute(_LINK_CATEGORIES, [p.arxiv_id for p in changed])

    async def get(self, arxiv_id: str) -> Paper | None:
        row = await self.db.fetchone(
            f"SELECT {PAPER}, {HEADLINE} FROM papers p WHERE p.arxiv_id = ?", (arxiv_id,)
        )
        return paper(row, headline=True) if row else None

    async def first_seen(self, arxiv_id: str) -> datetime | None:
        row = await self.db.fetchone("SELECT first_seen FROM papers WHERE arxiv_id = ?", (arxiv_id,))
        return from_ts(row[0]) if row else None

    async def count(self) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM papers")
        return int(row[0]) if row else 0

    async def count_in_categories(self, categories: Sequence[str], start: datetime, end: datetime) -> int:
        """Whole-day windows add up per-day counts kept in category_day_counts (as the SQLite store does)."""
        cats = sorted(set(categories))
        lo, hi = to_ts(start), to_ts(end)
        if lo % DAY or hi % DAY:
            return await self._count_distinct(cats, lo, hi)
        key, first, last = " ".join(cats), lo // DAY, hi // DAY
        rows = await self.db.fetchall(
            "SELECT day, papers FROM category_day_counts WHERE categories = ? AND day >= ? AND day < ?",
            (key, first, last),
        )
        known = {r[0]: r[1] for r in rows}
        missing = [d for d in range(first, last) if d not in known]
        if missing:
            async with self.db.transaction():
                counted = dict.fromkeys(missing, 0)
                for day, papers in await self.db.fetchall(
                    "SELECT published / 86400 AS day, COUNT(DISTINCT paper_pk) FROM paper_categories"
                    " WHERE category = ANY(?::text[]) AND published >= ? AND published < ? GROUP BY day",
                    (cats, missing[0] * DAY, (missing[-1] + 1) * DAY),
                ):
                    if day in counted:
                        counted[day] = papers
                await self.db.executemany(
                    "INSERT INTO category_day_counts (categories, day, papers) VALUES (?, ?, ?)"
                    " ON CONFLICT (categories, day) DO UPDATE SET papers = excluded.papers",
                    [(key, day, papers) for day, papers in counted.items()],
                )
            known.update(counted)
        return int(sum(known.values()))

    async def _count_distinct(self, categories: Sequence[str], lo: int, hi: int) -> int:
        row = await self.db.fetchone(
            "SELECT COUNT(DISTINCT paper_pk) FROM paper_categories"
            " WHERE category = ANY(?::text[]) AND published >= ? AND published < ?",
            (list(categories), lo, hi),
        )
        return int(row[0]) if row else 0

    async def category_names(self) -> list[str]:
        """A loose index scan, as the SQLite store's (one index seek per category)."""
        names: list[str] = []
        row = await self.db.fetchone("SELECT MIN(category) FROM paper_categories")
        while row is not None and row[0] is not None:
            names.append(row[0])
            row = await self.db.fetchone(
                "SELECT MIN(category) FROM paper_categories WHERE category > ?", (row[0],)
            )
        return names

    async def weekly_category_counts(self, since: datetime) -> list[tuple[str, str, int]]:
        rows = await self.db.fetchall(
            "SELECT to_char(date_trunc('week', to_timestamp(published) AT TIME ZONE 'UTC'), 'YYYY-MM-DD')"
            " AS week, category, COUNT(*) AS n FROM paper_categories WHERE published >= ?"
            " GROUP BY week, category ORDER BY week, category",
            (to_ts(since),),
        )
        return [(r["week"], r["category"], int(r["n"])) for r in rows]

    async def texts(
        self, *, after: int = 0, batch: int = 5000
    ) -> AsyncIterator[list[tuple[int, str, str, str]]]:
        while True:
            rows = await self.db.fetchall(
                "SELECT pk, arxiv_id, title, abstract FROM papers WHERE pk > ? ORDER BY pk LIMIT ?",
                (after, batch),
            )
            if not rows:
                return
            after = rows[-1][0]
            yield [(r[0], r[1], r[2], r[3]) for r in rows]

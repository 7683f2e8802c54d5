"""Topics (catalog and per-server) and their materialised matches."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.models import Paper
from bot.store.database import Database
from bot.store.papers import from_ts, paper_filter, paper_from_row, to_ts

CATALOG_GUILD = 0


@dataclass(frozen=True, slots=True)
class TopicRow:
    id: int
    guild_id: int
    slug: str
    name: str
    description: str
    query: str

    @property
    def is_catalog(self) -> bool:
        return self.guild_id == CATALOG_GUILD


def _topic(row: object) -> TopicRow:
    return TopicRow(row["id"], row["guild_id"], row["slug"], row["name"], row["description"], row["query"])  # type: ignore[index]


class TopicRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def save(
        self, *, guild_id: int, slug: str, name: str, description: str, query: str, at: datetime
    ) -> tuple[TopicRow, bool]:
        """Insert or update a topic by (guild, slug); returns it and whether its query changed (or it is new)."""
        current = await self.db.fetchone(
            "SELECT * FROM topics WHERE guild_id = ? AND slug = ?", (guild_id, slug)
        )
        if current is not None and (current["name"], current["description"], current["query"]) == (
            name,
            description,
            query,
        ):
            return _topic(
                current
            ), False  # the catalog is saved at every start: unchanged topics write nothing
        async with self.db.transaction() as conn:
            before = await self.db.fetchone(
                "SELECT query FROM topics WHERE guild_id = ? AND slug = ?", (guild_id, slug)
            )
            await conn.execute(
                "INSERT INTO topics (guild_id, slug, name, description, query, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, slug) DO UPDATE SET name = excluded.name,"
                " description = excluded.description, query = excluded.query, updated_at = excluded.updated_at",
                (guild_id, slug, name, description, query, to_ts(at), to_ts(at)),
            )
            row = await self.db.fetchone(
                "SELECT * FROM topics WHERE guild_id = ? AND slug = ?", (guild_id, slug)
            )
            changed = before is None or before["query"] != query
            if changed and before is not None:
                await conn.execute("DELETE FROM topic_matches WHERE topic_id = ?", (row["id"],))  # type: ignore[index]
        return _topic(row), changed

    async def get(self, topic_id: int) -> TopicRow | None:
        row = await self.db.fetchone("SELECT * FROM topics WHERE id = ?", (topic_id,))
        return _topic(row) if row else None

    async def find(self, guild_id: int, name_or_slug: str) -> TopicRow | None:
        """A server's own topic first, then the catalog; case-insensitive on name or slug."""
        row = await self.db.fetchone(
            "SELECT * FROM topics WHERE guild_id IN (?, ?) AND (name = ? COLLATE NOCASE OR slug = ? COLLATE NOCASE)"
            " ORDER BY guild_id = ? DESC LIMIT 1",
            (guild_id, CATALOG_GUILD, name_or_slug.strip(), name_or_slug.strip(), CATALOG_GUILD),
        )
        return _topic(row) if row else None

    async def visible_to(self, guild_id: int) -> list[TopicRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM topics WHERE guild_id IN (?, ?) ORDER BY name COLLATE NOCASE",
            (guild_id, CATALOG_GUILD),
        )
        return [_topic(r) for r in rows]

    async def all(self) -> list[TopicRow]:
        return [_topic(r) for r in await self.db.fetchall("SELECT * FROM topics ORDER BY id")]

    async def delete(self, topic_id: int) -> None:
        await self.db.execute("DELETE FROM topics WHERE id = ?", (topic_id,))

    async def add_matches(self, pairs: Sequence[tuple[int, str]], at: datetime) -> int:
        """Record (topic_id, arxiv_id) matches; already recorded ones are kept as they were."""
        if not pairs:
            return 0
        async with self.db.transaction() as conn:
            before = conn.total_changes
            await conn.executemany(
                "INSERT OR IGNORE INTO topic_matches (topic_id, published, paper_pk, matched_at)"
                " SELECT ?, published, pk, ? FROM papers WHERE arxiv_id = ?",
                [(topic_id, to_ts(at), arxiv_id) for topic_id, arxiv_id in pairs],
            )
            return conn.total_changes - before

    async def count_matches(self, topic_id: int, start: datetime, end: datetime) -> int:
        row = await self.db.fetchone(
            "SELECT COUNT(*) FROM topic_matches WHERE topic_id = ? AND published >= ? AND published < ?",
            (topic_id, to_ts(start), to_ts(end)),
        )
        return int(row[0]) if row else 0

    async def match_times(self, topic_id: int, start: datetime, end: datetime) -> list[datetime]:
        """v1 submission times of the topic's papers in [start, end), for weekly series."""
        rows = await self.db.fetchall(
            "SELECT published FROM topic_matches WHERE topic_id = ? AND published >= ? AND published < ?",
            (topic_id, to_ts(start), to_ts(end)),
        )
        return [from_ts(r[0]) for r in rows]

    async def latest_papers(self, topic_id: int, limit: int, offset: int = 0) -> list[Paper]:
        rows = await self.db.fetchall(
            "SELECT p.* FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk WHERE m.topic_id = ?"
            " ORDER BY m.published DESC LIMIT ? OFFSET ?",
            (topic_id, limit, offset),
        )
        return [paper_from_row(r) for r in rows]

    async def candidates(
        self,
        fts: str | None,
        *,
        categories: Sequence[str] = (),
        since: datetime | None = None,
        batch: int = 5000,
    ) -> AsyncIterator[list[Paper]]:
        """Stored papers that may match: the FTS5 prefilter when there is one, else every paper (of the
        categories, when named). Yields batches, so a history of a million papers never sits in memory."""
        where, params = paper_filter(categories=categories, since=since)
        if fts is not None:
            where += " AND p.pk IN (SELECT rowid FROM papers_fts WHERE papers_fts MATCH ?)"
            params.append(fts)
        last_pk = 0
        while True:
            rows = await self.db.fetchall(
                f"SELECT p.* FROM papers p WHERE p.pk > ?{where} ORDER BY p.pk LIMIT ?",
                (last_pk, *params, batch),
            )
            if not rows:
                return
            last_pk = rows[-1]["pk"]
            yield [paper_from_row(r) for r in rows]

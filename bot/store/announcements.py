"""How arXiv announced each stored paper in each watched category (from its RSS feed), and the one line of it a
card shows. The repository's SQL runs on SQLite and PostgreSQL alike (bot/store/sql.py); HEADLINE is SQLite's
(PostgreSQL's is in bot/store/postgres/papers.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import cast

import aiosqlite

from bot.models import ANNOUNCE_KINDS, AnnounceKind, Announcement
from bot.store.sql import SqlDatabase

_RANK = " ".join(f"WHEN '{kind}' THEN {rank}" for rank, kind in enumerate(ANNOUNCE_KINDS))
_SEP = "\x1f"
# A column for a query over papers aliased `p`: the announcement a card shows for the stored version, if any
# ("new" before "cross" before the replacements; then by category), as kind, category and day joined by _SEP.
HEADLINE = (
    "(SELECT a.kind || char(31) || a.category || char(31) || a.day FROM announcements a"
    f" WHERE a.paper_pk = p.pk AND a.version = p.version ORDER BY CASE a.kind {_RANK} END, a.category"
    " LIMIT 1) AS announced"
)


def headline_from(row: aiosqlite.Row, arxiv_id: str) -> Announcement | None:
    """The announcement of a row read with HEADLINE (and the paper's own columns)."""
    text = row["announced"]
    if not text:
        return None
    kind, category, day = text.split(_SEP)
    return Announcement(arxiv_id, row["version"], category, cast(AnnounceKind, kind), date.fromisoformat(day))


class AnnouncementRepo:
    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def record(self, announcements: Sequence[Announcement], at: datetime) -> int:
        """Remember announcements of stored papers (those of papers not stored are dropped); returns how many
        rows were written or moved on. Per (paper, category) the newest version wins, and the first sighting of
        a version stays: a feed serving an old batch again changes nothing."""
        written = 0
        async with self.db.transaction():
            for a in announcements:  # one at a time: a batch may name a (paper, category) twice
                written += await self.db.execute(
                    "INSERT INTO announcements (paper_pk, category, kind, version, day, seen_at)"
                    " SELECT pk, ?, ?, ?, ?, ? FROM papers WHERE arxiv_id = ?"
                    " ON CONFLICT (paper_pk, category) DO UPDATE SET kind = excluded.kind,"
                    " version = excluded.version, day = excluded.day, seen_at = excluded.seen_at"
                    " WHERE excluded.version > announcements.version",
                    (a.category, a.kind, a.version, a.day.isoformat(), int(at.timestamp()), a.arxiv_id),
                )
        return written

    async def of_paper(self, arxiv_id: str) -> list[Announcement]:
        """Every category's announcement of a paper, by category."""
        rows = await self.db.fetchall(
            "SELECT a.category, a.kind, a.version, a.day FROM announcements a"
            " JOIN papers p ON p.pk = a.paper_pk WHERE p.arxiv_id = ? ORDER BY a.category",
            (arxiv_id,),
        )
        return [
            Announcement(arxiv_id, r[2], r[0], cast(AnnounceKind, r[1]), date.fromisoformat(r[3]))
            for r in rows
        ]

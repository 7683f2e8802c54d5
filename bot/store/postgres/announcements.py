"""How arXiv announced each stored paper in each watched category, on PostgreSQL (bot/store/announcements.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import cast

from bot.models import AnnounceKind, Announcement
from bot.store.postgres.database import Database


class AnnouncementRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, announcements: Sequence[Announcement], at: datetime) -> int:
        """Per (paper, category) the newest version wins and the first sighting of a version stays; returns
        how many rows were written or moved on."""
        if not announcements:
            return 0
        written = 0
        async with self.db.transaction():
            for (
                a
            ) in announcements:  # one by one: a batch may name a (paper, category) twice, as SQLite allows
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
        rows = await self.db.fetchall(
            "SELECT a.category, a.kind, a.version, a.day FROM announcements a"
            " JOIN papers p ON p.pk = a.paper_pk WHERE p.arxiv_id = ? ORDER BY a.category",
            (arxiv_id,),
        )
        return [
            Announcement(arxiv_id, r[2], r[0], cast(AnnounceKind, r[1]), date.fromisoformat(r[3]))
            for r in rows
        ]

"""A member's reading list: papers saved from cards, newest first. Its SQL runs on SQLite and PostgreSQL alike
(bot/store/sql.py)."""

from __future__ import annotations

from datetime import datetime

from bot.models import SavedPaper
from bot.store.papers import from_ts, paper_from_row, to_ts
from bot.store.sql import PAPER_COLUMNS, SqlDatabase


class SavedRepo:
    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def save(self, member_id: int, arxiv_id: str, at: datetime) -> bool:
        """Put a stored paper on a member's list; False when it is there already (its save time stays).
        Raises LookupError when the paper is not stored."""
        async with self.db.transaction():
            found = await self.db.fetchone("SELECT pk FROM papers WHERE arxiv_id = ?", (arxiv_id,))
            if found is None:
                raise LookupError(f"paper {arxiv_id} is not stored")
            added = await self.db.execute(
                "INSERT INTO saved_papers (member_id, paper_pk, saved_at) VALUES (?, ?, ?)"
                " ON CONFLICT (member_id, paper_pk) DO NOTHING",
                (member_id, found[0], to_ts(at)),
            )
        return added > 0

    async def remove(self, member_id: int, arxiv_id: str) -> bool:
        """Take a paper off a member's list; False when it was not on it."""
        removed = await self.db.execute(
            "DELETE FROM saved_papers WHERE member_id = ?"
            " AND paper_pk = (SELECT pk FROM papers WHERE arxiv_id = ?)",
            (member_id, arxiv_id),
        )
        return removed > 0

    async def newest(self, member_id: int, *, limit: int, offset: int = 0) -> list[SavedPaper]:
        """A member's saved papers, the newest save first, from the `offset`-th on, at most `limit`."""
        if limit < 0 or offset < 0:
            raise ValueError("limit and offset must not be negative")
        rows = await self.db.fetchall(
            f"SELECT {PAPER_COLUMNS}, s.saved_at AS saved_at FROM saved_papers s JOIN papers p ON p.pk = s.paper_pk"
            " WHERE s.member_id = ? ORDER BY s.saved_at DESC, s.id DESC LIMIT ? OFFSET ?",
            (member_id, limit, offset),
        )
        return [SavedPaper(paper_from_row(r), from_ts(r["saved_at"])) for r in rows]

    async def count(self, member_id: int) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM saved_papers WHERE member_id = ?", (member_id,))
        return int(row[0]) if row else 0

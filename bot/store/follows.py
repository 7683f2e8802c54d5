"""Follows: which channel of which server follows which topic, how, and whether Discord still lets us post.
Its SQL runs on SQLite and PostgreSQL alike (bot/store/sql.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.models import Follow, MatchKind, Mode
from bot.store.papers import from_ts, to_ts
from bot.store.sql import SqlDatabase, ascii_folded, marks

_SELECT = "SELECT f.*, t.name AS topic_name FROM follows f JOIN topics t ON t.id = f.topic_id"


def _follow(row: object) -> Follow:
    r: Any = row  # SQLite's Row or asyncpg's Record: read by name
    return Follow(
        id=r["id"],
        guild_id=r["guild_id"],
        channel_id=r["channel_id"],
        topic_id=r["topic_id"],
        topic_name=r["topic_name"],
        mode=r["mode"],
        digest_hour=r["digest_hour"],
        created_at=from_ts(r["created_at"]),
        last_post_at=from_ts(r["last_post_at"]) if r["last_post_at"] is not None else None,
        broken_reason=r["broken_reason"],
        match=r["match"],
    )


class FollowRepo:
    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def upsert(
        self,
        *,
        guild_id: int,
        channel_id: int,
        topic_id: int,
        mode: Mode,
        digest_hour: int,
        created_by: int | None,
        at: datetime,
        match: MatchKind = "exact",
        channel_type: int | None = None,
    ) -> tuple[Follow, bool]:
        """Follow, or change how an existing follow posts (which also clears a broken mark). Returns the
        follow and whether it is new. `channel_type` (Discord's, when known) is recorded for the channel."""
        async with self.db.transaction():
            existing = await self.db.fetchone(
                "SELECT id FROM follows WHERE channel_id = ? AND topic_id = ?", (channel_id, topic_id)
            )
            await self.db.execute(
                "INSERT INTO follows (guild_id, channel_id, topic_id, mode, digest_hour, created_by, created_at, match)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel_id, topic_id) DO UPDATE SET"
                " mode = excluded.mode, digest_hour = excluded.digest_hour, match = excluded.match,"
                " broken_at = NULL, broken_reason = NULL",
                (guild_id, channel_id, topic_id, mode, digest_hour, created_by, to_ts(at), match),
            )
            if channel_type is not None:
                await self.set_channel_type(channel_id, channel_type)
            row = await self.db.fetchone(
                f"{_SELECT} WHERE f.channel_id = ? AND f.topic_id = ?", (channel_id, topic_id)
            )
        return _follow(row), existing is None

    async def for_guild(self, guild_id: int) -> list[Follow]:
        rows = await self.db.fetchall(f"{_SELECT} WHERE f.guild_id = ?", (guild_id,))
        return sorted(map(_follow, rows), key=lambda f: (ascii_folded(f.topic_name), f.channel_id))

    async def for_topics(self, topic_ids: list[int]) -> list[Follow]:
        """Working follows of any of these topics (broken ones receive nothing until fixed)."""
        if not topic_ids:
            return []
        rows = await self.db.fetchall(
            f"{_SELECT} WHERE f.topic_id IN ({marks(topic_ids)}) AND f.broken_reason IS NULL",
            topic_ids,
        )
        return [_follow(r) for r in rows]

    async def remove(self, guild_id: int, topic_id: int, channel_id: int | None = None) -> int:
        """Unfollow within one server; returns how many follows ended. Pending posts for them are dropped
        unless another follow in the same channel still wants the paper."""
        async with self.db.transaction():
            params: tuple[int, ...] = (guild_id, topic_id)
            where = "guild_id = ? AND topic_id = ?"
            if channel_id is not None:
                where += " AND channel_id = ?"
                params += (channel_id,)
            rows = await self.db.fetchall(f"DELETE FROM follows WHERE {where} RETURNING channel_id", params)
            channels = [r[0] for r in rows]
            if channels:
                await self.db.execute(
                    "DELETE FROM delivery_topics WHERE topic_id = ? AND delivery_id IN"
                    f" (SELECT id FROM deliveries WHERE channel_id IN ({marks(channels)}) AND status = 'pending')",
                    (topic_id, *channels),
                )
                await self.db.execute(
                    f"DELETE FROM deliveries WHERE channel_id IN ({marks(channels)}) AND status = 'pending'"
                    " AND NOT EXISTS (SELECT 1 FROM delivery_topics dt WHERE dt.delivery_id = deliveries.id)",
                    channels,
                )
        return len(channels)

    async def mark_broken(self, channel_id: int, reason: str, at: datetime) -> None:
        await self.db.execute(
            "UPDATE follows SET broken_at = ?, broken_reason = ? WHERE channel_id = ?",
            (to_ts(at), reason[:300], channel_id),
        )

    async def touch(self, channel_id: int, at: datetime) -> None:
        await self.db.execute(
            "UPDATE follows SET last_post_at = ? WHERE channel_id = ?", (to_ts(at), channel_id)
        )

    async def channel_type(self, channel_id: int) -> int | None:
        """The channel's kind (Discord's channel type) as last recorded; None when not known."""
        row = await self.db.fetchone(
            "SELECT MAX(channel_type) FROM follows WHERE channel_id = ? AND channel_type IS NOT NULL",
            (channel_id,),
        )
        return None if row is None or row[0] is None else int(row[0])

    async def set_channel_type(self, channel_id: int, channel_type: int) -> None:
        """Record the channel's kind on each of its follows (a channel's follows all post in the one channel)."""
        await self.db.execute(
            "UPDATE follows SET channel_type = ? WHERE channel_id = ?"
            " AND (channel_type IS NULL OR channel_type <> ?)",
            (channel_type, channel_id, channel_type),
        )

    async def digest_channels_due(self, hour: int) -> list[int]:
        rows = await self.db.fetchall(
            "SELECT DISTINCT channel_id FROM follows WHERE mode = 'digest' AND digest_hour = ?"
            " AND broken_reason IS NULL AND channel_id > 0",
            (hour,),
        )
        return [r[0] for r in rows]

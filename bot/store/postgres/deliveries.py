"""The delivery outbox on PostgreSQL: rows written with the papers that cause them, claimed, sent and marked
(bot/store/deliveries.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

from bot.models import Mode, PendingDelivery, Wanted
from bot.store.papers import to_ts
from bot.store.postgres.database import Database, Row
from bot.store.postgres.papers import HEADLINE, PAPER, paper
from bot.store.postgres.topics import with_card_topics


class DeliveryRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def enqueue(self, wanted: Sequence[Wanted], at: datetime) -> None:
        """One row per (channel, paper); a second topic adds its name to the same row. A paper already sent to
        a channel is never queued there again. An 'each' follow upgrades a pending digest row to 'each'."""
        if not wanted:
            return
        now = to_ts(at)
        rows: dict[
            tuple[int, str], tuple[int, str]
        ] = {}  # (channel, paper) -> (guild, mode), first guild wins
        for w in wanted:
            guild, mode = rows.get((w.channel_id, w.arxiv_id), (w.guild_id, w.mode))
            rows[(w.channel_id, w.arxiv_id)] = (guild, "each" if "each" in (mode, w.mode) else mode)
        async with self.db.transaction():
            await self.db.executemany(
                "INSERT INTO deliveries (guild_id, channel_id, paper_pk, mode, next_attempt_at, created_at)"
                " SELECT ?::bigint, ?::bigint, pk, ?::text, ?::bigint, ?::bigint FROM papers WHERE arxiv_id = ?"
                " ON CONFLICT (channel_id, paper_pk) DO UPDATE SET mode = 'each'"
                " WHERE excluded.mode = 'each' AND deliveries.status = 'pending'",
                [(g, c, m, now, now, a) for (c, a), (g, m) in rows.items()],
            )
            await self.db.executemany(
                "INSERT INTO delivery_topics (delivery_id, topic_id)"
                " SELECT d.id, ?::bigint FROM deliveries d JOIN papers p ON p.pk = d.paper_pk"
                " WHERE d.channel_id = ? AND p.arxiv_id = ? AND d.status = 'pending' ON CONFLICT DO NOTHING",
                [(w.topic_id, w.channel_id, w.arxiv_id) for w in wanted],
            )

    async def channels_due(self, mode: Mode, now: datetime, *, console: bool = False) -> list[int]:
        side = "channel_id < 0" if console else "channel_id > 0"
        rows = await self.db.fetchall(
            "SELECT DISTINCT channel_id FROM deliveries WHERE status = 'pending' AND mode = ?"
            f" AND next_attempt_at <= ? AND {side}",
            (mode, to_ts(now)),
        )
        return [r[0] for r in rows]

    async def for_channel(
        self, channel_id: int, *, mode: Mode, now: datetime | None, statuses: Sequence[str] = ("pending",)
    ) -> list[PendingDelivery]:
        """Due deliveries of a channel in announcement order: when queued, then submission time."""
        rows = await self.db.fetchall(
            "SELECT d.id AS delivery_id, d.guild_id AS d_guild, d.channel_id AS d_channel, d.mode AS d_mode,"
            f" d.status AS d_status, d.attempts AS d_attempts, {PAPER}, {HEADLINE},"
            " (SELECT string_agg(t.name, chr(31) ORDER BY t.name) FROM delivery_topics dt"
            "   JOIN topics t ON t.id = dt.topic_id WHERE dt.delivery_id = d.id) AS topic_names"
            " FROM deliveries d JOIN papers p ON p.pk = d.paper_pk"
            " WHERE d.channel_id = ? AND d.mode = ? AND d.status = ANY(?::text[])"
            " AND d.next_attempt_at <= ? ORDER BY d.created_at, p.published, d.id",
            (channel_id, mode, list(statuses), to_ts(now) if now is not None else 2**62),
        )
        pending = await asyncio.to_thread(lambda: [_pending(r) for r in rows])
        return await with_card_topics(self.db, pending)

    async def in_flight(self, *, console: bool = False) -> list[PendingDelivery]:
        side = "channel_id < 0" if console else "channel_id > 0"
        rows = await self.db.fetchall(
            f"SELECT DISTINCT channel_id, mode FROM deliveries WHERE status = 'sending' AND {side}"
        )
        found: list[PendingDelivery] = []
        for row in rows:
            found += await self.for_channel(row[0], mode=row[1], now=None, statuses=("sending",))
        return found

    async def mark_sending(self, ids: Sequence[int]) -> None:
        await self.db.execute(
            "UPDATE deliveries SET status = 'sending', attempts = attempts + 1 WHERE id = ANY(?::bigint[])",
            (list(ids),),
        )

    async def mark_sent(self, ids: Sequence[int], message_id: int | None, at: datetime) -> None:
        await self.db.execute(
            "UPDATE deliveries SET status = 'sent', sent_at = ?, message_id = ?, error = NULL"
            " WHERE id = ANY(?::bigint[])",
            (to_ts(at), message_id, list(ids)),
        )

    async def mark_retry(self, ids: Sequence[int], next_attempt: datetime, error: str) -> None:
        await self.db.execute(
            "UPDATE deliveries SET status = 'pending', next_attempt_at = ?, error = ? WHERE id = ANY(?::bigint[])",
            (to_ts(next_attempt), error[:300], list(ids)),
        )

    async def postpone_channel(self, channel_id: int, until: datetime) -> None:
        await self.db.execute(
            "UPDATE deliveries SET next_attempt_at = GREATEST(next_attempt_at, ?)"
            " WHERE channel_id = ? AND status = 'pending'",
            (to_ts(until), channel_id),
        )

    async def mark(self, ids: Sequence[int], status: str, error: str | None = None) -> None:
        await self.db.execute(
            "UPDATE deliveries SET status = ?, error = ? WHERE id = ANY(?::bigint[])",
            (status, error, list(ids)),
        )

    async def fail_channel(self, channel_id: int, error: str) -> int:
        return await self.db.execute(
            "UPDATE deliveries SET status = 'failed', error = ? WHERE channel_id = ?"
            " AND status IN ('pending', 'sending')",
            (error[:300], channel_id),
        )

    async def counts(self, guild_id: int) -> dict[str, int]:
        rows = await self.db.fetchall(
            "SELECT status, COUNT(*) FROM deliveries WHERE guild_id = ? GROUP BY status", (guild_id,)
        )
        return {r[0]: int(r[1]) for r in rows}

    async def sent_ids(self, channel_id: int) -> list[str]:
        rows = await self.db.fetchall(
            "SELECT p.arxiv_id FROM deliveries d JOIN papers p ON p.pk = d.paper_pk"
            " WHERE d.channel_id = ? AND d.status = 'sent' ORDER BY d.sent_at",
            (channel_id,),
        )
        return [r[0] for r in rows]


def _pending(row: Row) -> PendingDelivery:
    names = row["topic_names"]
    return PendingDelivery(
        id=row["delivery_id"],
        guild_id=row["d_guild"],
        channel_id=row["d_channel"],
        mode=row["d_mode"],
        status=row["d_status"],
        attempts=row["d_attempts"],
        paper=paper(row, headline=True),
        topics=tuple(names.split("\x1f")) if names else (),
    )

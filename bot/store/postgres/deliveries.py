"""The delivery outbox on PostgreSQL: the SQLite store's repository (bot/store/deliveries.py), with PostgreSQL's
names for a string aggregate and a two-argument maximum, its headline, and lease claims that skip the lease rows
other workers are claiming at that moment; its enqueue writes a poll's whole fan-out in three set statements
(arrays unnested) where the shared one runs a statement per row."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar

from bot.models import PendingDelivery, Wanted
from bot.store.deliveries import DeliveryRepo as SharedDeliveryRepo
from bot.store.papers import to_ts
from bot.store.postgres.papers import HEADLINE
from bot.store.postgres.topics import with_card_topics


class DeliveryRepo(SharedDeliveryRepo):
    HEADLINE: ClassVar[str] = HEADLINE
    TOPIC_NAMES: ClassVar[str] = (
        "(SELECT string_agg(t.name, chr(31) ORDER BY t.name) FROM delivery_topics dt"
        " JOIN topics t ON t.id = dt.topic_id WHERE dt.delivery_id = d.id)"
    )
    GREATEST: ClassVar[str] = "GREATEST"
    LOCK: ClassVar[str] = " FOR UPDATE OF l SKIP LOCKED"

    async def card_topics(self, items: list[PendingDelivery]) -> list[PendingDelivery]:
        return await with_card_topics(self.db, items)  # type: ignore[arg-type]

    async def enqueue(self, wanted: Sequence[Wanted], at: datetime) -> None:
        """As the shared enqueue (bot/store/deliveries.py), each table written by one statement over arrays:
        a day's fan-out is hundreds of thousands of rows, which a statement per row takes half a minute for."""
        if not wanted:
            return
        now = to_ts(at)
        rows: dict[
            tuple[int, str], tuple[int, str]
        ] = {}  # (channel, paper) -> (guild, mode), first guild wins
        for w in wanted:
            guild, mode = rows.get((w.channel_id, w.arxiv_id), (w.guild_id, w.mode))
            rows[(w.channel_id, w.arxiv_id)] = (guild, "each" if "each" in (mode, w.mode) else mode)
        topics = list(dict.fromkeys((w.topic_id, w.channel_id, w.arxiv_id) for w in wanted))
        async with self.db.transaction():
            await self.db.execute(  # each (channel, paper) once: one statement may touch a row only once
                "INSERT INTO deliveries (guild_id, channel_id, paper_pk, mode, next_attempt_at, created_at)"
                " SELECT w.guild_id, w.channel_id, p.pk, w.mode, ?, ?"
                " FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[]) AS w (guild_id, channel_id, arxiv_id, mode)"
                " JOIN papers p ON p.arxiv_id = w.arxiv_id"
                " ON CONFLICT (channel_id, paper_pk) DO UPDATE SET mode = 'each'"
                " WHERE excluded.mode = 'each' AND deliveries.status = 'pending'",
                (
                    now,
                    now,
                    [g for g, _ in rows.values()],
                    [c for c, _ in rows],
                    [a for _, a in rows],
                    [m for _, m in rows.values()],
                ),
            )
            await self.db.execute(
                "INSERT INTO delivery_topics (delivery_id, topic_id)"
                " SELECT d.id, w.topic_id FROM unnest(?::bigint[], ?::bigint[], ?::text[]) AS w (topic_id, channel_id, arxiv_id)"
                " JOIN papers p ON p.arxiv_id = w.arxiv_id"
                " JOIN deliveries d ON d.channel_id = w.channel_id AND d.paper_pk = p.pk"
                " WHERE d.status = 'pending' ON CONFLICT DO NOTHING",
                ([t for t, _, _ in topics], [c for _, c, _ in topics], [a for _, _, a in topics]),
            )
            await self.db.execute(
                "INSERT INTO delivery_leases (channel_id) SELECT unnest(?::bigint[]) ORDER BY 1"
                " ON CONFLICT (channel_id) DO NOTHING",
                (sorted({c for c, _ in rows}),),
            )

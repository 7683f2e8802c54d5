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
        a day's fan-out is hundreds of thousands of rows, which a statement per row takes half a minute for.
        The topic links take the ids the insert returns; only rows it left alone are looked up."""
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
            stored = await self.db.fetchall(
                "SELECT arxiv_id, pk FROM papers WHERE arxiv_id = ANY(?::text[])",
                (sorted({a for _, a in rows}),),
            )
            pks: dict[str, int] = {r[0]: r[1] for r in stored}  # a paper not stored is never queued
            posts = [(c, pks[a], g, m) for (c, a), (g, m) in rows.items() if a in pks]
            written = await self.db.fetchall(  # each (channel, paper) once: a statement may touch a row once
                "INSERT INTO deliveries (guild_id, channel_id, paper_pk, mode, next_attempt_at, created_at)"
                " SELECT w.guild_id, w.channel_id, w.paper_pk, w.mode, ?, ?"
                " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::text[]) AS w (guild_id, channel_id, paper_pk, mode)"
                " ON CONFLICT (channel_id, paper_pk) DO UPDATE SET mode = 'each'"
                " WHERE excluded.mode = 'each' AND deliveries.status = 'pending' RETURNING id, channel_id, paper_pk",
                (
                    now,
                    now,
                    [p[2] for p in posts],
                    [p[0] for p in posts],
                    [p[1] for p in posts],
                    [p[3] for p in posts],
                ),
            )
            ids = {(r[1], r[2]): r[0] for r in written}
            left = [(c, pk) for c, pk, _, _ in posts if (c, pk) not in ids]  # already queued or already sent
            if left:
                for r in await self.db.fetchall(
                    "SELECT d.id, d.channel_id, d.paper_pk FROM unnest(?::bigint[], ?::bigint[]) AS w (channel_id, paper_pk)"
                    " JOIN deliveries d ON d.channel_id = w.channel_id AND d.paper_pk = w.paper_pk"
                    " WHERE d.status = 'pending'",
                    ([c for c, _ in left], [pk for _, pk in left]),
                ):
                    ids[(r[1], r[2])] = r[0]
            links = list(
                dict.fromkeys(
                    (ids[key], w.topic_id)
                    for w in wanted
                    if (key := (w.channel_id, pks.get(w.arxiv_id, 0))) in ids
                )
            )
            await self.db.execute(
                "INSERT INTO delivery_topics (delivery_id, topic_id)"
                " SELECT * FROM unnest(?::bigint[], ?::bigint[]) ON CONFLICT DO NOTHING",
                ([d for d, _ in links], [t for _, t in links]),
            )
            await self.db.execute(
                "INSERT INTO delivery_leases (channel_id) SELECT unnest(?::bigint[]) ORDER BY 1"
                " ON CONFLICT (channel_id) DO NOTHING",
                (sorted({c for c, _ in rows}),),
            )

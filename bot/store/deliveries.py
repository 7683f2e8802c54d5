"""The delivery outbox: rows written with the papers that cause them, claimed, sent, and marked.

Written in SQL both engines run; the PostgreSQL store's subclass (bot/store/postgres/deliveries.py) names its own
string aggregate, maximum and headline, and locks the lease rows it claims (`FOR UPDATE SKIP LOCKED`).

Deliver workers share the outbox by channel: a worker claims a channel's lease (delivery_leases), so a channel's
order and its rate limit stay in one worker, renews it while posting and frees it when done. A lease that expired
(its worker was killed) is claimed by another worker, which checks the rows left 'sending' first. On PostgreSQL
a lease is free as soon as its worker's session is gone (`keep_alive`), without waiting for it to expire.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

from bot.models import Mode, PendingDelivery, Wanted
from bot.store.announcements import HEADLINE, headline_from
from bot.store.papers import paper_from_row, to_ts
from bot.store.sql import SqlDatabase
from bot.store.topics import with_card_topics

# What a Paper is read from (both engines' papers tables hold these columns).
PAPER = (
    "p.pk, p.arxiv_id, p.version, p.title, p.abstract, p.authors_json, p.primary_category, p.categories,"
    " p.published, p.updated, p.comment, p.journal_ref, p.doi, p.authors_omitted, p.provisional"
)
_CHUNK = 500  # ids per statement: well within both engines' limits on parameters


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def _chunks(ids: Sequence[int]) -> list[Sequence[int]]:
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]


def _side(console: bool, column: str = "channel_id") -> str:
    """Discord channels (positive ids), or with `console` the terminal's (negative ids)."""
    return f"{column} < 0" if console else f"{column} > 0"


class DeliveryRepo:
    HEADLINE: ClassVar[str] = HEADLINE
    TOPIC_NAMES: ClassVar[str] = (
        "(SELECT group_concat(name, char(31)) FROM (SELECT t.name FROM delivery_topics dt"
        " JOIN topics t ON t.id = dt.topic_id WHERE dt.delivery_id = d.id ORDER BY t.name))"
    )
    GREATEST: ClassVar[str] = "MAX"  # SQLite's scalar max()
    LOCK: ClassVar[str] = ""  # SQLite serialises writers: the claim's UPDATE alone is enough
    # SQL true when the worker named by the column `{holder}` has stopped; SQLite (one machine) has no way to
    # tell, so its leases run out instead.
    HOLDER_GONE: ClassVar[str] = ""

    def __init__(self, db: SqlDatabase) -> None:
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
                " SELECT CAST(? AS BIGINT), CAST(? AS BIGINT), pk, CAST(? AS TEXT), CAST(? AS BIGINT),"
                " CAST(? AS BIGINT) FROM papers WHERE arxiv_id = ?"
                " ON CONFLICT (channel_id, paper_pk) DO UPDATE SET mode = 'each'"
                " WHERE excluded.mode = 'each' AND deliveries.status = 'pending'",
                [(g, c, m, now, now, a) for (c, a), (g, m) in rows.items()],
            )
            await self.db.executemany(
                "INSERT INTO delivery_topics (delivery_id, topic_id)"
                " SELECT d.id, CAST(? AS BIGINT) FROM deliveries d JOIN papers p ON p.pk = d.paper_pk"
                " WHERE d.channel_id = ? AND p.arxiv_id = ? AND d.status = 'pending' ON CONFLICT DO NOTHING",
                [(w.topic_id, w.channel_id, w.arxiv_id) for w in wanted],
            )
            await self.db.executemany(
                "INSERT INTO delivery_leases (channel_id) VALUES (?) ON CONFLICT (channel_id) DO NOTHING",
                [(c,) for c in sorted({c for c, _ in rows})],
            )

    async def channels_due(self, mode: Mode, now: datetime, *, console: bool = False) -> list[int]:
        """Channels with due rows: Discord channels, or with `console` the terminal's (negative ids)."""
        rows = await self.db.fetchall(
            "SELECT DISTINCT channel_id FROM deliveries WHERE status = 'pending' AND mode = ?"
            f" AND next_attempt_at <= ? AND {_side(console)}",
            (mode, to_ts(now)),
        )
        return [r[0] for r in rows]

    def _free(self, table: str) -> str:
        """The lease of this row of `table` is expired, already the worker's (the second `?`), or its holder
        stopped."""
        gone = self.HOLDER_GONE.format(holder=f"{table}.claimed_by")
        return f"({table}.lease_until <= ? OR {table}.claimed_by = ?{' OR ' + gone if gone else ''})"

    async def keep_alive(self, worker: str) -> None:
        """Show `worker` as running, for as long as this process runs (PostgreSQL); nothing on SQLite."""

    async def retire(self, worker: str) -> None:
        """`worker` stopped: its leases are free to claim (PostgreSQL); nothing on SQLite."""

    async def take_turn(self, now: datetime, limit: int, window: float) -> datetime | None:
        """On PostgreSQL, the time this process's next request to Discord may go, at most `limit` in any
        `window` seconds across every process. None here: a SQLite file is one machine's, its one deliver
        process paces itself alone (bot/pacing.py)."""
        return None

    async def claim_channels(
        self,
        worker: str,
        mode: Mode,
        now: datetime,
        until: datetime,
        *,
        console: bool = False,
        limit: int = 50,
    ) -> list[int]:
        """Take the lease, until `until`, of up to `limit` channels with rows of this mode due by `now` (or left
        'sending' by a worker that died) whose lease is free, expired or already `worker`'s. Concurrent
        claimers never get the same channel: on PostgreSQL each skips the lease rows the others are claiming."""
        at = to_ts(now)
        async with self.db.transaction():
            rows = await self.db.fetchall(
                "UPDATE delivery_leases SET claimed_by = ?, lease_until = ? WHERE channel_id IN ("
                " SELECT l.channel_id FROM delivery_leases l"
                f" WHERE {self._free('l')} AND {_side(console, 'l.channel_id')}"
                " AND EXISTS (SELECT 1 FROM deliveries d WHERE d.channel_id = l.channel_id"
                "  AND (d.status = 'sending' OR (d.status = 'pending' AND d.mode = ? AND d.next_attempt_at <= ?)))"
                f" ORDER BY l.lease_until, l.channel_id LIMIT ?{self.LOCK})"
                f" AND {self._free('delivery_leases')} RETURNING channel_id",
                (worker, to_ts(until), at, worker, mode, at, limit, at, worker),
            )
        return sorted(r[0] for r in rows)

    async def hold(self, worker: str, channel_id: int, now: datetime, until: datetime) -> bool:
        """Take or renew one channel's lease until `until`: False when another worker holds it unexpired."""
        async with self.db.transaction():
            row = await self.db.fetchone(
                "INSERT INTO delivery_leases (channel_id, claimed_by, lease_until) VALUES (?, ?, ?)"
                " ON CONFLICT (channel_id) DO UPDATE SET claimed_by = excluded.claimed_by,"
                " lease_until = excluded.lease_until"
                f" WHERE {self._free('delivery_leases')} RETURNING channel_id",
                (channel_id, worker, to_ts(until), to_ts(now), worker),
            )
        return row is not None

    async def release(self, worker: str, channel_ids: Sequence[int]) -> None:
        """Free the leases `worker` holds on these channels, for any worker to claim at once."""
        for chunk in _chunks(list(channel_ids)):
            await self.db.execute(
                "UPDATE delivery_leases SET claimed_by = '', lease_until = 0"
                f" WHERE claimed_by = ? AND channel_id IN ({_marks(chunk)})",
                (worker, *chunk),
            )

    async def for_channel(
        self, channel_id: int, *, mode: Mode, now: datetime | None, statuses: Sequence[str] = ("pending",)
    ) -> list[PendingDelivery]:
        """Deliveries of a channel due by `now` (any, when None) in announcement order: when stored, then
        submission time."""
        rows = await self.db.fetchall(
            "SELECT d.id AS delivery_id, d.guild_id AS d_guild, d.channel_id AS d_channel, d.mode AS d_mode,"
            f" d.status AS d_status, d.attempts AS d_attempts, {PAPER}, {self.HEADLINE},"
            f" {self.TOPIC_NAMES} AS topic_names"
            " FROM deliveries d JOIN papers p ON p.pk = d.paper_pk"
            f" WHERE d.channel_id = ? AND d.mode = ? AND d.status IN ({_marks(statuses)})"
            " AND d.next_attempt_at <= ? ORDER BY d.created_at, p.published, d.id",
            (channel_id, mode, *statuses, to_ts(now) if now is not None else 2**62),
        )
        # Decoding a page of rows (authors' JSON) is CPU work: off the event loop, as commands wait on it.
        pending = await asyncio.to_thread(lambda: [_pending(r) for r in rows])
        return await self.card_topics(pending)

    async def card_topics(self, items: list[PendingDelivery]) -> list[PendingDelivery]:
        """The deliveries with the topics their cards name (bot/store/topics.py with_card_topics)."""
        return await with_card_topics(self.db, items)  # type: ignore[arg-type]

    async def in_flight(
        self, *, console: bool = False, channel_id: int | None = None
    ) -> list[PendingDelivery]:
        """Deliveries claimed for sending when their worker stopped (of one channel, when given): sent or not,
        nobody knows yet."""
        where = "channel_id = ?" if channel_id is not None else _side(console)
        rows = await self.db.fetchall(
            f"SELECT DISTINCT channel_id, mode FROM deliveries WHERE status = 'sending' AND {where}",
            (channel_id,) if channel_id is not None else (),
        )
        found: list[PendingDelivery] = []
        for row in rows:
            found += await self.for_channel(row[0], mode=row[1], now=None, statuses=("sending",))
        return found

    async def _update(self, sql: str, ids: Sequence[int], params: Sequence[object] = ()) -> None:
        """`sql` (ending in `id IN`) for these ids, in chunks, in one transaction."""
        async with self.db.transaction():
            for chunk in _chunks(list(ids)):
                await self.db.execute(f"{sql} ({_marks(chunk)})", (*params, *chunk))

    async def mark_sending(self, ids: Sequence[int]) -> None:
        await self._update(
            "UPDATE deliveries SET status = 'sending', attempts = attempts + 1 WHERE id IN", ids
        )

    async def mark_sent(self, ids: Sequence[int], message_id: int | None, at: datetime) -> None:
        await self._update(
            "UPDATE deliveries SET status = 'sent', sent_at = ?, message_id = ?, error = NULL WHERE id IN",
            ids,
            (to_ts(at), message_id),
        )

    async def mark_retry(self, ids: Sequence[int], next_attempt: datetime, error: str) -> None:
        await self._update(
            "UPDATE deliveries SET status = 'pending', next_attempt_at = ?, error = ? WHERE id IN",
            ids,
            (to_ts(next_attempt), error[:300]),
        )

    async def postpone_channel(self, channel_id: int, until: datetime) -> None:
        """Hold every pending row of a channel until `until`, so posts keep their order after a rate limit."""
        await self.db.execute(
            f"UPDATE deliveries SET next_attempt_at = {self.GREATEST}(next_attempt_at, ?)"
            " WHERE channel_id = ? AND status = 'pending'",
            (to_ts(until), channel_id),
        )

    async def mark(self, ids: Sequence[int], status: str, error: str | None = None) -> None:
        """'summarised' (named in a "+N more" message) or 'failed' (given up, with the reason)."""
        await self._update("UPDATE deliveries SET status = ?, error = ? WHERE id IN", ids, (status, error))

    async def fail_channel(self, channel_id: int, error: str) -> int:
        """Give up every unsent delivery of a channel Discord refuses (deleted, or access removed)."""
        async with self.db.transaction():
            rows = await self.db.fetchall(
                "UPDATE deliveries SET status = 'failed', error = ? WHERE channel_id = ?"
                " AND status IN ('pending', 'sending') RETURNING id",
                (error[:300], channel_id),
            )
        return len(rows)

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


def _pending(row: Any) -> PendingDelivery:
    names = row["topic_names"]
    return PendingDelivery(
        id=row["delivery_id"],
        guild_id=row["d_guild"],
        channel_id=row["d_channel"],
        mode=row["d_mode"],
        status=row["d_status"],
        attempts=row["d_attempts"],
        paper=paper_from_row(row, headline_from(row, row["arxiv_id"])),
        topics=tuple(names.split("\x1f")) if names else (),
    )

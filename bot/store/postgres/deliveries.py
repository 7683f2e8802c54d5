"""The delivery outbox on PostgreSQL: the SQLite store's repository (bot/store/deliveries.py), with PostgreSQL's
names for a string aggregate and a two-argument maximum, its headline, lease claims that skip the lease rows
other workers are claiming at that moment, workers' liveness, and an enqueue that writes a poll's whole fan-out
in three set statements (arrays unnested) where the shared one runs a statement per row.

Liveness: each deliver worker holds a session-level advisory lock keyed on its id (`keep_alive`, on a connection
of its own) while it runs. PostgreSQL frees the lock when that session ends (the process was killed, its machine
died), so a claim finds the holder gone in pg_locks and takes its channels at once instead of waiting out the
lease; the rows it left 'sending' are checked first, as after any crash, so nothing is posted twice."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import ClassVar

from bot.errors import Unreachable
from bot.models import PendingDelivery, Wanted
from bot.store.deliveries import DeliveryRepo as SharedDeliveryRepo
from bot.store.papers import to_ts
from bot.store.postgres.database import AdvisoryLock, Database, describe
from bot.store.postgres.papers import HEADLINE
from bot.store.postgres.topics import with_card_topics

# The advisory lock key of a worker, computed the same way by the worker (to take it) and by a claim (to look
# it up); pg_locks shows a bigint key as its high (classid) and low (objid) 32 bits, objsubid 1.
_WORKER_KEY = "hashtextextended('paperwatch:deliver:' || {worker}, 0)"
_HOLDER_GONE = (
    "NOT EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.objsubid = 1 AND k.granted"
    " AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND (k.classid::bigint << 32 | k.objid::bigint) = " + _WORKER_KEY.format(worker="{holder}") + ")"
)


class DeliveryRepo(SharedDeliveryRepo):
    HEADLINE: ClassVar[str] = HEADLINE
    TOPIC_NAMES: ClassVar[str] = (
        "(SELECT string_agg(t.name, chr(31) ORDER BY t.name) FROM delivery_topics dt"
        " JOIN topics t ON t.id = dt.topic_id WHERE dt.delivery_id = d.id)"
    )
    GREATEST: ClassVar[str] = "GREATEST"
    LOCK: ClassVar[str] = " FOR UPDATE OF l SKIP LOCKED"
    HOLDER_GONE: ClassVar[str] = _HOLDER_GONE

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.url = db.url
        self._alive: dict[str, AdvisoryLock] = {}  # this process's workers' liveness locks

    async def keep_alive(self, worker: str) -> None:
        """Take (or check, and take again after a lost session) `worker`'s liveness lock. Raises Unreachable
        when it cannot: a worker other claims would take for dead must not claim channels itself."""
        lock = self._alive.get(worker)
        if lock is None:
            row = await self.db.fetchone("SELECT " + _WORKER_KEY.format(worker="CAST(? AS TEXT)"), (worker,))
            lock = self._alive[worker] = AdvisoryLock(self.url, f"deliver worker {worker}", key=row[0])
        if not await lock.try_acquire():
            raise Unreachable(
                f"could not show deliver worker {worker} as running in the PostgreSQL {describe(self.url)}"
                " (a session of its own holds an advisory lock); delivery runs again once the server answers"
            )

    async def retire(self, worker: str) -> None:
        lock = self._alive.pop(worker, None)
        if lock is not None:
            await lock.release()

    async def take_turn(self, now: datetime, limit: int, window: float) -> datetime | None:
        """The window's next turn (bot/pacing.py `Turns`, here in one statement on the one row, whose lock orders
        the processes taking turns at once): a window over starts again at `now`; a full one passes its turns to
        the window after it. The row is written by the first turn (and again should it be emptied)."""
        at, span = _micros(now), round(window * 1_000_000)
        row = await self.db.fetchone(
            "INSERT INTO discord_turns AS t (id, window_start, turns) VALUES (1, CAST(? AS BIGINT), 1)"
            " ON CONFLICT (id) DO UPDATE SET"
            " window_start = CASE WHEN CAST(? AS BIGINT) >= t.window_start + ? THEN ?"
            "  WHEN t.turns >= ? THEN t.window_start + ? ELSE t.window_start END,"
            " turns = CASE WHEN CAST(? AS BIGINT) >= t.window_start + ? OR t.turns >= ? THEN 1 ELSE t.turns + 1 END"
            " RETURNING GREATEST(window_start, ?)",
            (at, at, span, at, limit, span, at, span, limit, at),
        )
        assert row is not None  # an upsert returns its row
        return datetime.fromtimestamp(row[0] / 1_000_000, UTC)

    async def close(self) -> None:
        """Every liveness session of this process ends (the store closes)."""
        for worker in list(self._alive):
            await self.retire(worker)

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


def _micros(moment: datetime) -> int:
    """Microseconds since the epoch (turns are a few milliseconds apart: seconds, as `to_ts` keeps, are too coarse)."""
    return round(moment.timestamp() * 1_000_000)

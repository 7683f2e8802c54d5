"""The delivery outbox on PostgreSQL: the SQLite store's repository (bot/store/deliveries.py), with PostgreSQL's
names for a string aggregate and a two-argument maximum, its array of a row's topic ids, its headline, lease claims
that skip the lease rows other workers are claiming at that moment, workers' liveness, its way of passing the
fan-out's input rows (an array per column, unnested), and the outbox's write (grouped by row, and without ON
CONFLICT unless some row is there already: see `_write`).

Liveness: each deliver worker holds a session-level advisory lock keyed on its id (`keep_alive`, on a connection
of its own) while it runs. PostgreSQL frees the lock when that session ends (the process was killed, its machine
died), so a claim finds the holder gone in pg_locks and takes its channels at once instead of waiting out the
lease; the rows it left 'sending' are checked first, as after any crash, so nothing is posted twice."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import ClassVar

import asyncpg

from bot.errors import Unreachable
from bot.models import PendingDelivery
from bot.store.deliveries import DeliveryRepo as SharedDeliveryRepo
from bot.store.papers import to_ts
from bot.store.postgres.database import AdvisoryLock, Database, changed, describe, numbered
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
        "(SELECT string_agg(t.name, chr(31) ORDER BY t.name) FROM topics t WHERE t.id = ANY (d.topic_ids))"
    )
    TOPIC_UNION: ClassVar[str] = (
        "ARRAY(SELECT DISTINCT u FROM unnest(deliveries.topic_ids || excluded.topic_ids) AS u ORDER BY u)"
    )
    GREATEST: ClassVar[str] = "GREATEST"
    LOCK: ClassVar[str] = " FOR UPDATE OF l SKIP LOCKED"
    HOLDER_GONE: ClassVar[str] = _HOLDER_GONE

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.pg = db  # its own transactions: a savepoint within one (see _write)
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

    def rows(
        self, columns: Sequence[tuple[str, str]], values: Sequence[Sequence[object]]
    ) -> tuple[str, list[object]]:
        """As the shared one, an array parameter per column, unnested side by side."""
        arrays = ", ".join(f"?::{kind}[]" for _, kind in columns)
        names = ", ".join(name for name, _ in columns)
        return f"SELECT * FROM unnest({arrays}) AS t ({names})", [
            [v[i] for v in values] for i in range(len(columns))
        ]

    async def _write(self, wanted: str, params: Sequence[object], at: datetime) -> int:
        """As the shared one, the wishes grouped by row first (a statement may not touch a row twice), and
        inserted without ON CONFLICT, whose per-row cost (speculative insertion) was a fifth of the fan-out's
        time: in a savepoint, so that if some (channel, paper) has a row already (never for the fan-out's papers,
        new to the store) only this statement is undone and the merging one runs instead. Returns the rows it
        added."""
        now = to_ts(at)
        grouped = (  # 'each' sorts after 'digest': MAX is 'each' when any wish wants a card for each paper
            "SELECT MIN(w.guild_id) AS guild_id, w.channel_id, w.paper_pk, MAX(w.mode) AS mode,"
            f" array_agg(DISTINCT w.topic_id ORDER BY w.topic_id) AS topic_ids FROM ({wanted}) AS w"
            " GROUP BY w.channel_id, w.paper_pk"
        )
        insert = (
            "INSERT INTO deliveries (guild_id, channel_id, paper_pk, mode, next_attempt_at, created_at, topic_ids)"
            f" SELECT w.guild_id, w.channel_id, w.paper_pk, w.mode, ?, ?, w.topic_ids FROM ({grouped}) AS w"
            " ORDER BY w.channel_id, w.paper_pk"
        )
        async with self.pg.transaction() as conn:
            try:
                async with conn.transaction():  # a savepoint
                    return changed(await conn.execute(numbered(insert), now, now, *params))
            except asyncpg.UniqueViolationError:
                last = await conn.fetchval("SELECT COALESCE(MAX(id), 0) FROM deliveries")
                await conn.execute(numbered(insert + self.merge()), now, now, *params)
                return int(await conn.fetchval("SELECT COUNT(*) FROM deliveries WHERE id > $1", last))


def _micros(moment: datetime) -> int:
    """Microseconds since the epoch (turns are a few milliseconds apart: seconds, as `to_ts` keeps, are too coarse)."""
    return round(moment.timestamp() * 1_000_000)

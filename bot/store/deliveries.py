"""The delivery outbox: rows written with the papers that cause them, claimed, sent, and marked.

Written in SQL both engines run; the PostgreSQL store's subclass (bot/store/postgres/deliveries.py) names its own
string aggregate, maximum, headline and array of topic ids, passes input rows as arrays, and locks the lease rows it
claims (`FOR UPDATE SKIP LOCKED`).

A poll's fan-out is written inside the database (`fan_out`): the process passes the day's (topic, paper) rows, a
few thousand, and one INSERT ... SELECT joins them with the follows into one row per (channel, paper), hundreds of
thousands at 10,000 servers. A row holds the ids of the followed topics it stands for (`topic_ids`: a JSON array on
SQLite, bigint[] on PostgreSQL; `delivery_topics` is a view of them for the readers).

Deliver workers share the outbox by channel: a worker claims a channel's lease (delivery_leases), so a channel's
order and its rate limit stay in one worker, renews it while posting and frees it when done. A lease that expired
(its worker was killed) is claimed by another worker, which checks the rows left 'sending' first. On PostgreSQL
a lease is free as soon as its worker's session is gone (`keep_alive`), without waiting for it to expire. The workers
in a round show themselves in delivery_workers (`share`): each holds at most its share of the channels with posts
due, counted over them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

from bot.models import Mode, PendingDelivery, Reach, Wanted, WorkShare
from bot.store.announcements import HEADLINE, headline_from
from bot.store.card_topics import with_card_topics
from bot.store.papers import from_ts, paper_from_row, to_ts
from bot.store.sql import SqlDatabase

# What a Paper is read from (both engines' papers tables hold these columns).
PAPER = (
    "p.pk, p.arxiv_id, p.version, p.title, p.abstract, p.authors_json, p.primary_category, p.categories,"
    " p.published, p.updated, p.comment, p.journal_ref, p.doi, p.authors_omitted, p.provisional"
)
# A fan-out's input rows (models.Reach): their columns and types.
_REACH = (("topic_id", "bigint"), ("guild_id", "bigint"), ("paper_pk", "bigint"), ("kind", "text"))
_WANTED = (  # enqueue's (models.Wanted)
    ("guild_id", "bigint"),
    ("channel_id", "bigint"),
    ("arxiv_id", "text"),
    ("mode", "text"),
    ("topic_id", "bigint"),
)
_CHUNK = 500  # ids per statement: well within both engines' limits on parameters


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def _chunks(ids: Sequence[int]) -> list[Sequence[int]]:
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]


# A channel (lease row `l`) has work: rows of the mode (the first `?`) due by the second `?`, or left 'sending'.
_HAS_WORK = (
    "EXISTS (SELECT 1 FROM deliveries d WHERE d.channel_id = l.channel_id"
    " AND (d.status = 'sending' OR (d.status = 'pending' AND d.mode = ? AND d.next_attempt_at <= ?)))"
)


def _side(console: bool, column: str = "channel_id") -> str:
    """Discord channels (positive ids), or with `console` the terminal's (negative ids)."""
    return f"{column} < 0" if console else f"{column} > 0"


class DeliveryRepo:
    HEADLINE: ClassVar[str] = HEADLINE
    TOPIC_NAMES: ClassVar[str] = (
        "(SELECT group_concat(name, char(31)) FROM (SELECT t.name FROM json_each(d.topic_ids) j"
        " JOIN topics t ON t.id = j.value ORDER BY t.name))"
    )
    # The topic ids of a row wanted again (`excluded`) merged with those it holds: a JSON array on SQLite, an
    # array of bigint on PostgreSQL.
    TOPIC_UNION: ClassVar[str] = (
        "(SELECT json_group_array(DISTINCT value) FROM (SELECT value FROM json_each(deliveries.topic_ids)"
        " UNION ALL SELECT value FROM json_each(excluded.topic_ids)))"
    )
    GREATEST: ClassVar[str] = "MAX"  # SQLite's scalar max()
    LOCK: ClassVar[str] = ""  # SQLite serialises writers: the claim's UPDATE alone is enough
    # SQL true when the worker named by the column `{holder}` has stopped; SQLite (one machine) has no way to
    # tell, so its leases run out instead.
    HOLDER_GONE: ClassVar[str] = ""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def rows(
        self, columns: Sequence[tuple[str, str]], values: Sequence[Sequence[object]]
    ) -> tuple[str, list[object]]:
        """A relation of `values` with these (name, SQL type) columns, passed as one parameter: its SQL and
        parameters. SQLite reads a JSON array of rows; PostgreSQL's subclass unnests an array per column."""
        picks = ", ".join(f"json_extract(value, '$[{i}]') AS {name}" for i, (name, _) in enumerate(columns))
        return f"SELECT {picks} FROM json_each(?)", [json.dumps(values)]

    def merge(self) -> str:
        """The rule for a wish whose (channel, paper) has a row already: on a pending row it adds its topic and
        makes the row 'each' if it wants a card for each paper; a row no longer pending (sent) stays as it is."""
        return (
            f" ON CONFLICT (channel_id, paper_pk) DO UPDATE SET topic_ids = {self.TOPIC_UNION},"
            " mode = CASE WHEN excluded.mode = 'each' THEN 'each' ELSE deliveries.mode END"
            " WHERE deliveries.status = 'pending'"
        )

    async def _write(self, wanted: str, params: Sequence[object], at: datetime) -> int:
        """Write the posts `wanted` names (SQL of (guild_id, channel_id, paper_pk, mode, topic_id): a follow's
        wish for a paper; `params`, its parameters) as `enqueue` says. Returns the rows it added.

        A wish at a time, in key order (the unique index is then written in order: a third cheaper than in join
        order, and than grouping the wishes first); a second wish for a row this statement wrote merges into it
        by the same rule as a wish for a row already there (SQLite applies the rule to its own new rows)."""
        now = to_ts(at)
        async with self.db.transaction():
            last = await self.db.fetchone("SELECT COALESCE(MAX(id), 0) FROM deliveries")
            await self.db.execute(
                "INSERT INTO deliveries (guild_id, channel_id, paper_pk, mode, next_attempt_at, created_at, topic_ids)"
                " SELECT w.guild_id, w.channel_id, w.paper_pk, w.mode, ?, ?, json_array(w.topic_id)"
                f" FROM ({wanted}) AS w ORDER BY w.channel_id, w.paper_pk{self.merge()}",
                (now, now, *params),
            )
            added = await self.db.fetchone("SELECT COUNT(*) FROM deliveries WHERE id > ?", (last[0],))
        return int(added[0])

    async def _lease_rows(self, channels: str, params: Sequence[object]) -> None:
        """A lease row for each channel `channels` (SQL of channel_id) names that has none yet."""
        await self.db.execute(
            f"INSERT INTO delivery_leases (channel_id) SELECT DISTINCT c.channel_id FROM ({channels}) AS c"
            " WHERE NOT EXISTS (SELECT 1 FROM delivery_leases l WHERE l.channel_id = c.channel_id)"
            " ORDER BY 1 ON CONFLICT (channel_id) DO NOTHING",
            params,
        )

    async def enqueue(self, wanted: Sequence[Wanted], at: datetime) -> None:
        """One row per (channel, paper); a second topic adds its name to the same row. A paper already sent to
        a channel is never queued there again. An 'each' follow upgrades a pending digest row to 'each'."""
        if not wanted:
            return
        given, params = self.rows(
            _WANTED,
            [(w.guild_id, w.channel_id, w.arxiv_id, w.mode, w.topic_id) for w in wanted],
        )
        async with self.db.transaction():
            await self._write(
                "SELECT g.guild_id, g.channel_id, p.pk AS paper_pk, g.mode, g.topic_id"
                f" FROM ({given}) AS g JOIN papers p ON p.arxiv_id = g.arxiv_id",
                params,
                at,
            )
            channels, params = self.rows(
                (("channel_id", "bigint"),), sorted({(w.channel_id,) for w in wanted})
            )
            await self._lease_rows(channels, params)

    async def fan_out(self, reach: Sequence[Reach], at: datetime) -> int:
        """One poll's posts, joined with the follows inside the database (a day's fan-out is hundreds of
        thousands of rows, which the process would otherwise build and send one by one): every working follow
        a `Reach` row names wants its paper, unless a 'withheld' row keeps it from that server's follows of the
        topic. Written as `enqueue` writes; returns the rows it added."""
        if not reach:
            return 0
        async with self.db.transaction():
            ids, params = self.rows((("arxiv_id", "text"),), sorted({(r.arxiv_id,) for r in reach}))
            pks: dict[str, int] = {  # the papers first: joined after the follows, each is looked up per post
                row[0]: row[1]
                for row in await self.db.fetchall(
                    f"SELECT p.arxiv_id, p.pk FROM ({ids}) AS i JOIN papers p ON p.arxiv_id = i.arxiv_id",
                    params,
                )
            }
            wants = [(r.topic_id, r.guild_id, pks[r.arxiv_id], r.kind) for r in reach if r.arxiv_id in pks]
            held = [w[:3] for w in wants if w[3] == "withheld"]
            given, reaching = self.rows(_REACH, [w for w in wants if w[3] != "withheld"])
            # The follows a row reaches: of its topic, in its server (if any), asking for suggestions (if those).
            reached = (
                " JOIN follows f ON f.topic_id = r.topic_id AND f.broken_reason IS NULL"
                " AND (r.guild_id IS NULL OR f.guild_id = r.guild_id) AND (r.kind = 'exact' OR f.match = 'suggested')"
            )
            wanted = f"SELECT f.guild_id, f.channel_id, r.paper_pk, f.mode, f.topic_id FROM ({given}) AS r{reached}"
            params = reaching
            if held:  # a server's ratings keep these from its follows of the topic
                withheld, more = self.rows(_REACH[:3], held)
                wanted += (
                    f" LEFT JOIN ({withheld}) AS x ON x.topic_id = f.topic_id AND x.guild_id = f.guild_id"
                    " AND x.paper_pk = r.paper_pk WHERE x.topic_id IS NULL"
                )
                params = [*reaching, *more]
            written = await self._write(wanted, params, at)
            await self._lease_rows(
                f"SELECT f.channel_id FROM (SELECT DISTINCT topic_id, guild_id, kind FROM ({given}) AS g) AS r{reached}",
                reaching,
            )
        return written

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

    async def share(self, worker: str, now: datetime, until: datetime, *, console: bool = False) -> WorkShare:
        """Show `worker` in a round until `until`; count the channels with work and the workers in a round
        (those whose row has not run out and, on PostgreSQL, whose process runs: `HOLDER_GONE`). Rows run out
        are dropped (a killed worker's, which never left)."""
        at = to_ts(now)
        gone = self.HOLDER_GONE.format(holder="w.worker_id")
        async with self.db.transaction():
            await self.db.execute("DELETE FROM delivery_workers WHERE round_until <= ?", (at,))
            await self.db.execute(
                "INSERT INTO delivery_workers (worker_id, round_until) VALUES (?, ?)"
                " ON CONFLICT (worker_id) DO UPDATE SET round_until = excluded.round_until",
                (worker, to_ts(until)),
            )
            row = await self.db.fetchone(
                "SELECT (SELECT COUNT(*) FROM delivery_leases l"
                f" WHERE {_side(console, 'l.channel_id')} AND {_HAS_WORK}),"
                f" (SELECT COUNT(*) FROM delivery_workers w{' WHERE NOT ' + gone if gone else ''})",
                ("each", at),
            )
        assert row is not None  # counts always give a row
        return WorkShare(busy=int(row[0]), workers=max(1, int(row[1])))

    async def leave(self, worker: str) -> None:
        """`worker`'s round is over: not counted among the workers sharing the channels."""
        await self.db.execute("DELETE FROM delivery_workers WHERE worker_id = ?", (worker,))

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
        holding: Sequence[int] = (),
    ) -> list[int]:
        """Take the lease, until `until`, of up to `limit` channels with rows of this mode due by `now` (or left
        'sending' by a worker that died) whose lease is free, expired or already `worker`'s, other than those
        it is `holding` (posting in now). Concurrent claimers never get the same channel: on PostgreSQL each
        skips the lease rows the others are claiming."""
        at = to_ts(now)
        held = list(holding)
        besides = f" AND l.channel_id NOT IN ({_marks(held)})" if held else ""
        async with self.db.transaction():
            rows = await self.db.fetchall(
                "UPDATE delivery_leases SET claimed_by = ?, lease_until = ? WHERE channel_id IN ("
                " SELECT l.channel_id FROM delivery_leases l"
                f" WHERE {self._free('l')} AND {_side(console, 'l.channel_id')} AND {_HAS_WORK}{besides}"
                f" ORDER BY l.lease_until, l.channel_id LIMIT ?{self.LOCK})"
                f" AND {self._free('delivery_leases')} RETURNING channel_id",
                (worker, to_ts(until), at, worker, mode, at, *held, limit, at, worker),
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

    async def mark_sending(self, ids: Sequence[int], at: datetime | None = None) -> None:
        await self._update(
            "UPDATE deliveries SET status = 'sending', attempts = attempts + 1, sending_at = ? WHERE id IN",
            ids,
            (to_ts(at) if at is not None else None,),
        )

    async def sending_since(self, channel_id: int) -> datetime | None:
        """When the channel's rows left 'sending' were marked so (the earliest); None when it has none or the
        time of one is not known."""
        row = await self.db.fetchone(
            "SELECT COUNT(*), COUNT(sending_at), MIN(sending_at) FROM deliveries"
            " WHERE channel_id = ? AND status = 'sending'",
            (channel_id,),
        )
        if row is None or row[0] == 0 or row[0] != row[1]:
            return None
        return from_ts(row[2])

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

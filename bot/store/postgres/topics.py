"""Topics (catalog and per-server) and their materialised matches, on PostgreSQL (bot/store/topics.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import pairwise

import asyncpg

from bot.models import CATALOG_GUILD, Paper, PendingDelivery, TopicRow, find_named, fold_name, topic_key
from bot.store.card_topics import name_card_topics  # what the cards name, once read
from bot.store.papers import to_ts
from bot.store.postgres.database import Database, Row
from bot.store.postgres.fts_query import to_condition
from bot.store.postgres.papers import PAPER, paper, paper_filter
from bot.store.protocol import TopicNameTaken
from bot.store.topic_days import TopicDayCounts  # written in SQL both engines run


def _topic(row: Row) -> TopicRow:
    fields = ("id", "guild_id", "slug", "name", "description", "query", "parent_id")
    return TopicRow(*(row[name] for name in fields))


def _pairs(pairs: Sequence[tuple[int, str]]) -> tuple[list[int], list[str]]:
    unique = list(dict.fromkeys(pairs))  # one statement may touch a row once
    return [t for t, _ in unique], [a for _, a in unique]


_CATALOG_LOCK = 0x70617063  # advisory lock key held while a process stores the catalog (`lock_catalog`)
_Prefilter = tuple[str | None, tuple[str, ...], datetime | None]  # fts, categories, since


@dataclass(frozen=True)
class _Hits:
    key: _Prefilter
    pks: list[int]
    top: int  # the highest pk stored when they were read


class TopicRepo(TopicDayCounts):
    db: Database  # this engine's own (its dialect's statements below)

    def __init__(self, db: Database) -> None:
        self.db = db
        self._counted: _Hits | None = None  # the last count's candidates (see _hits)

    async def save(
        self, *, guild_id: int, slug: str, name: str, description: str, query: str, at: datetime
    ) -> tuple[TopicRow, bool]:
        current = await self.db.fetchone(
            "SELECT * FROM topics WHERE guild_id = ? AND slug = ?", (guild_id, slug)
        )
        if current is not None and (current["name"], current["description"], current["query"]) == (
            name,
            description,
            query,
        ):
            return _topic(
                current
            ), False  # the catalog is saved at every start: unchanged topics write nothing
        async with self.db.transaction():
            before = await self.db.fetchone(
                "SELECT query FROM topics WHERE guild_id = ? AND slug = ? FOR UPDATE", (guild_id, slug)
            )
            row = await self.db.fetchone(
                "INSERT INTO topics (guild_id, slug, name, description, query, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, slug) DO UPDATE SET name = excluded.name,"
                " description = excluded.description, query = excluded.query, updated_at = excluded.updated_at"
                " RETURNING *",
                (guild_id, slug, name, description, query, to_ts(at), to_ts(at)),
            )
            assert row is not None
            changed = before is None or before["query"] != query
            if changed and before is not None:
                await self.db.execute("DELETE FROM topic_matches WHERE topic_id = ?", (row["id"],))
        return _topic(row), changed

    async def create(
        self,
        *,
        guild_id: int,
        name: str,
        description: str,
        query: str,
        at: datetime,
        parent_id: int | None = None,
    ) -> TopicRow:
        try:
            async with self.db.transaction():
                row = await self.db.fetchone(
                    "INSERT INTO topics (guild_id, slug, name, description, query, created_at, updated_at,"
                    " parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                    (guild_id, topic_key(name), name, description, query, to_ts(at), to_ts(at), parent_id),
                )
        except asyncpg.UniqueViolationError:
            raise TopicNameTaken(name) from None
        assert row is not None
        return _topic(row)

    async def change(self, topic_id: int, *, query: str, at: datetime) -> tuple[TopicRow, bool]:
        async with self.db.transaction():
            before = await self.get(topic_id)
            if before is None:
                raise LookupError(f"no topic {topic_id}")
            if before.query == query:
                return before, False
            await self.db.execute(
                "UPDATE topics SET query = ?, updated_at = ? WHERE id = ?", (query, to_ts(at), topic_id)
            )
            await self.db.execute("DELETE FROM topic_matches WHERE topic_id = ?", (topic_id,))
        return replace(before, query=query), True

    async def set_parent(self, topic_id: int, parent_id: int | None, at: datetime) -> bool:
        async with self.db.transaction():
            before = await self.get(topic_id)
            if before is None:
                raise LookupError(f"no topic {topic_id}")
            if before.parent_id == parent_id:
                return False
            await self.db.execute(
                "UPDATE topics SET parent_id = ?, updated_at = ? WHERE id = ?",
                (parent_id, to_ts(at), topic_id),
            )
        return True

    async def get(self, topic_id: int) -> TopicRow | None:
        row = await self.db.fetchone("SELECT * FROM topics WHERE id = ?", (topic_id,))
        return _topic(row) if row else None

    async def own(self, guild_id: int) -> list[TopicRow]:
        rows = await self.db.fetchall("SELECT * FROM topics WHERE guild_id = ?", (guild_id,))
        return sorted((_topic(r) for r in rows), key=lambda t: fold_name(t.name))

    async def find(self, guild_id: int, name_or_slug: str) -> TopicRow | None:
        own = await self.own(guild_id) if guild_id != CATALOG_GUILD else []
        return find_named(own, name_or_slug) or find_named(await self.own(CATALOG_GUILD), name_or_slug)

    async def visible_to(self, guild_id: int) -> list[TopicRow]:
        own = await self.own(guild_id) if guild_id != CATALOG_GUILD else []
        taken = {topic_key(t.name) for t in own}
        catalog = [t for t in await self.own(CATALOG_GUILD) if topic_key(t.name) not in taken]
        return sorted([*own, *catalog], key=lambda t: fold_name(t.name))

    async def count_own(self, guild_id: int) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM topics WHERE guild_id = ?", (guild_id,))
        return int(row[0]) if row else 0

    async def lock_catalog(self) -> None:
        """A transaction-level advisory lock: two processes saving the catalog's topics at once raced on the
        topics' unique name index (one died at its start) or deadlocked on each other's rows."""
        await self.db.fetchone("SELECT pg_advisory_xact_lock(?)", (_CATALOG_LOCK,))

    async def rekey_legacy(self) -> list[tuple[TopicRow, str]]:
        """Topics saved before names were keyed exist only in SQLite stores (migration 0007): none here."""
        return []

    async def all(self) -> list[TopicRow]:
        return [_topic(r) for r in await self.db.fetchall("SELECT * FROM topics ORDER BY id")]

    async def delete(self, topic_id: int) -> None:
        await self.db.execute("DELETE FROM topics WHERE id = ?", (topic_id,))

    # ---- history still to match (topic_history_pending) ------------------------------------------------------

    async def queue_history(self, topic_ids: Sequence[int], at: datetime) -> None:
        """Remember that these topics' stored history is still to be matched (kept across restarts)."""
        await self.db.executemany(
            "INSERT INTO topic_history_pending (topic_id, queued_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(topic_id, to_ts(at)) for topic_id in dict.fromkeys(topic_ids)],
        )

    async def history_queue(self) -> list[int]:
        """Topics whose history is still to be matched, oldest request first."""
        rows = await self.db.fetchall(
            "SELECT topic_id FROM topic_history_pending ORDER BY queued_at, topic_id"
        )
        return [int(row[0]) for row in rows]

    async def history_matched(self, topic_id: int) -> None:
        await self.db.execute("DELETE FROM topic_history_pending WHERE topic_id = ?", (topic_id,))

    async def add_matches(
        self, pairs: Sequence[tuple[int, str]], at: datetime, *, through: Sequence[tuple[int, str]] = ()
    ) -> int:
        """Own matches, then those held through a descendant; returns how many own matches are new (or became
        own). Pairs of a deleted topic or an unstored paper are dropped."""
        if not pairs and not through:
            return 0
        async with self.db.transaction():
            topics, papers = _pairs(pairs)
            added = await self.db.execute(
                "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at, direct)"
                " SELECT t.id, p.published, p.pk, ?, 1 FROM unnest(?::bigint[], ?::text[]) AS w (topic_id, arxiv_id)"
                " JOIN topics t ON t.id = w.topic_id JOIN papers p ON p.arxiv_id = w.arxiv_id"
                " ON CONFLICT (topic_id, paper_pk) DO UPDATE SET direct = 1, kind = 'exact'"
                " WHERE topic_matches.direct = 0 OR topic_matches.kind = 'suggested'",
                (to_ts(at), topics, papers),
            )
            topics, papers = _pairs(through)
            await self.db.execute(
                "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at, direct)"
                " SELECT t.id, p.published, p.pk, ?, 0 FROM unnest(?::bigint[], ?::text[]) AS w (topic_id, arxiv_id)"
                " JOIN topics t ON t.id = w.topic_id JOIN papers p ON p.arxiv_id = w.arxiv_id"
                " ON CONFLICT (topic_id, paper_pk) DO UPDATE SET direct = 0, kind = 'exact'"
                " WHERE topic_matches.kind = 'suggested'",
                (to_ts(at), topics, papers),
            )
        return added

    async def add_suggestions(self, pairs: Sequence[tuple[int, str]], at: datetime) -> int:
        if not pairs:
            return 0
        topics, papers = _pairs(pairs)
        return await self.db.execute(
            "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at, direct, kind)"
            " SELECT t.id, p.published, p.pk, ?, 1, 'suggested'"
            " FROM unnest(?::bigint[], ?::text[]) AS w (topic_id, arxiv_id)"
            " JOIN topics t ON t.id = w.topic_id JOIN papers p ON p.arxiv_id = w.arxiv_id ON CONFLICT DO NOTHING",
            (to_ts(at), topics, papers),
        )

    async def replace_suggestions(self, topic_id: int, arxiv_ids: Sequence[str], at: datetime) -> int:
        async with self.db.transaction():
            await self.db.execute(
                "DELETE FROM topic_matches WHERE topic_id = ? AND kind = 'suggested'", (topic_id,)
            )
            await self.add_suggestions([(topic_id, a) for a in arxiv_ids], at)
            row = await self.db.fetchone(
                "SELECT COUNT(*) FROM topic_matches WHERE topic_id = ? AND kind = 'suggested'", (topic_id,)
            )
        return int(row[0]) if row else 0

    async def suggested_among(self, topic_ids: Sequence[int], arxiv_ids: Sequence[str]) -> set[str]:
        if not topic_ids or not arxiv_ids:
            return set()
        rows = await self.db.fetchall(
            "SELECT p.arxiv_id FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk"
            " WHERE m.topic_id = ANY(?::bigint[]) AND p.arxiv_id = ANY(?::text[])"
            " GROUP BY p.arxiv_id HAVING bool_and(m.kind = 'suggested')",
            (list(topic_ids), list(arxiv_ids)),
        )
        return {r[0] for r in rows}

    async def rebuild_inherited(self, topic_id: int, descendants: Sequence[int], at: datetime) -> None:
        async with self.db.transaction():
            if not descendants:
                await self.db.execute(
                    "DELETE FROM topic_matches WHERE topic_id = ? AND direct = 0 AND kind = 'exact'",
                    (topic_id,),
                )
                return
            # Only exact rows are inherited: a child's suggestions are its scorer's, the parent has its own.
            await self.db.execute(
                "DELETE FROM topic_matches WHERE topic_id = ? AND direct = 0 AND kind = 'exact' AND paper_pk NOT IN"
                " (SELECT paper_pk FROM topic_matches WHERE topic_id = ANY(?::bigint[]) AND direct = 1"
                " AND kind = 'exact')",
                (topic_id, list(descendants)),
            )
            await self.db.execute(
                "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at, direct)"
                " SELECT DISTINCT ON (paper_pk) ?::bigint, published, paper_pk, ?::bigint, 0 FROM topic_matches"
                " WHERE topic_id = ANY(?::bigint[]) AND direct = 1 AND kind = 'exact'"
                " ON CONFLICT (topic_id, paper_pk) DO UPDATE SET direct = 0, kind = 'exact'"
                " WHERE topic_matches.kind = 'suggested'",
                (topic_id, to_ts(at), list(descendants)),
            )

    async def matched_ids(self, topic_id: int) -> list[str]:
        rows = await self.db.fetchall(
            "SELECT p.arxiv_id FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk"
            " WHERE m.topic_id = ? AND m.kind = 'exact'",
            (topic_id,),
        )
        return [r[0] for r in rows]

    async def count_suggested(
        self, topic_ids: Sequence[int], start: datetime, end: datetime
    ) -> dict[int, int]:
        if not topic_ids:
            return {}
        rows = await self.db.fetchall(
            "SELECT topic_id, COUNT(*) FROM topic_matches WHERE topic_id = ANY(?::bigint[])"
            " AND kind = 'suggested' AND published >= ? AND published < ? GROUP BY topic_id",
            (list(topic_ids), to_ts(start), to_ts(end)),
        )
        counts = dict.fromkeys(topic_ids, 0)
        counts.update({r[0]: int(r[1]) for r in rows})
        return counts

    async def count_matches(self, topic_id: int, start: datetime, end: datetime) -> int:
        row = await self.db.fetchone(
            "SELECT COUNT(*) FROM topic_matches WHERE topic_id = ? AND published >= ? AND published < ?"
            " AND kind = 'exact'",
            (topic_id, to_ts(start), to_ts(end)),
        )
        return int(row[0]) if row else 0

    async def counts_between(
        self,
        topic_ids: Sequence[int],
        bounds: Sequence[datetime],
        *,
        including: Mapping[int, Sequence[int]] | None = None,
    ) -> dict[int, list[int]]:
        """Matches of each topic per window between consecutive bounds, in one query; a topic's count also
        takes, each paper once, the papers of the topics `including` lists for it."""
        if len(bounds) < 2:
            raise ValueError("counting needs at least two bounds")
        counts = {topic_id: [0] * (len(bounds) - 1) for topic_id in topic_ids}
        if not counts:
            return counts
        edges = [to_ts(b) for b in bounds]
        windows = ", ".join("COUNT(*) FILTER (WHERE published >= ? AND published < ?)" for _ in edges[1:])
        window_params = [e for pair in pairwise(edges) for e in pair]
        extra = {t: list(including[t]) for t in counts if including and including.get(t)}
        members = [(t, m) for t in counts for m in dict.fromkeys((t, *extra.get(t, ())))]
        rows = await self.db.fetchall(
            f"SELECT topic, {windows} FROM (SELECT DISTINCT w.topic, m.published, m.paper_pk"
            " FROM unnest(?::bigint[], ?::bigint[]) AS w (topic, member)"
            " JOIN topic_matches m ON m.topic_id = w.member"
            " WHERE m.published >= ? AND m.published < ? AND m.kind = 'exact') AS found GROUP BY topic",
            (*window_params, [t for t, _ in members], [m for _, m in members], edges[0], edges[-1]),
        )
        for row in rows:
            counts[row[0]] = [int(n) for n in tuple(row)[1:]]
        return counts

    async def followed_in(self, guild_id: int) -> list[TopicRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM topics WHERE id IN (SELECT topic_id FROM follows WHERE guild_id = ?)", (guild_id,)
        )
        return sorted((_topic(r) for r in rows), key=lambda t: fold_name(t.name))

    async def latest_papers(
        self,
        topic_id: int,
        limit: int,
        offset: int = 0,
        *,
        including: Sequence[int] = (),
        suggested: bool = False,
    ) -> list[Paper]:
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
        kinds = "" if suggested else " AND kind = 'exact'"
        rows = await self.db.fetchall(
            f"SELECT {PAPER} FROM (SELECT paper_pk, MAX(published) AS published FROM topic_matches"
            f" WHERE topic_id = ANY(?::bigint[]){kinds} GROUP BY paper_pk"
            " ORDER BY published DESC, paper_pk DESC LIMIT ? OFFSET ?) m JOIN papers p ON p.pk = m.paper_pk"
            " ORDER BY m.published DESC, m.paper_pk DESC",
            ([topic_id, *including], limit, offset),
        )
        return [paper(r) for r in rows]

    @staticmethod
    def _prefilter(
        fts: str | None, categories: Sequence[str], since: datetime | None
    ) -> tuple[str, list[object]]:
        """SQL conditions on papers `p` that the candidates of a topic query pass (title-only words through
        the index of titles: see fts_query.py)."""
        where, params = paper_filter(categories=categories, since=since)
        condition = to_condition(fts)
        if condition is not None:
            where += f" AND {condition[0]}"
            params.extend(condition[1])
        return where, params

    async def _hits(self, key: _Prefilter) -> _Hits:
        """The pks of the candidates stored up to now, read through the GIN index: the MATERIALIZED CTE keeps
        the planner from walking the primary key (an ORDER BY pk or a LIMIT invite it), which checks each of a
        million tsvectors. Kept for the next count and `candidates` of the same prefilter (a history match counts
        its candidates, twice, before it reads them; each read costs a second at a million papers): a paper
        stored or revised meanwhile is the live matcher's, as the topic is registered before its history."""
        where, params = self._prefilter(*key)
        row = await self.db.fetchone("SELECT COALESCE(MAX(pk), 0) FROM papers")
        top = int(row[0]) if row else 0
        rows = await self.db.fetchall(
            f"WITH hits AS MATERIALIZED (SELECT p.pk FROM papers p WHERE p.pk <= ?{where})"
            " SELECT pk FROM hits ORDER BY pk",
            (top, *params),
        )
        self._counted = _Hits(key, [r[0] for r in rows], top)
        return self._counted

    async def count_candidates(
        self, fts: str | None, *, categories: Sequence[str] = (), since: datetime | None = None, cap: int
    ) -> int:
        key = (fts, tuple(categories), since)
        hits = self._counted if self._counted is not None and self._counted.key == key else None
        return min(len((hits or await self._hits(key)).pks), cap)

    async def candidates(
        self,
        fts: str | None,
        *,
        categories: Sequence[str] = (),
        since: datetime | None = None,
        batch: int = 5000,
    ) -> AsyncIterator[list[Paper]]:
        """Papers passing the prefilter (translated to a tsquery that never drops a match), in batches of
        ascending pk: those the last count found (or found now), then any stored since that count."""
        key = (fts, tuple(categories), since)
        hits, self._counted = self._counted, None
        if hits is None or hits.key != key:
            hits = await self._hits(key)
            self._counted = None
        for start in range(0, len(hits.pks), batch):
            rows = await self.db.fetchall(
                f"SELECT {PAPER} FROM papers p WHERE p.pk = ANY(?::bigint[]) ORDER BY p.pk",
                (hits.pks[start : start + batch],),
            )
            if rows:  # deleted meanwhile otherwise
                yield [paper(r) for r in rows]
        where, params = self._prefilter(*key)
        last_pk = hits.top
        while True:  # stored since the count: few, read along the primary key
            rows = await self.db.fetchall(
                f"SELECT {PAPER} FROM papers p WHERE p.pk > ?{where} ORDER BY p.pk LIMIT ?",
                (last_pk, *params, batch),
            )
            if not rows:
                return
            last_pk = rows[-1]["pk"]
            yield [paper(r) for r in rows]


async def with_card_topics(db: Database, items: list[PendingDelivery]) -> list[PendingDelivery]:
    """The deliveries with the topics their cards name (see bot/store/topics.py with_card_topics)."""
    if not items:
        return items
    followed: dict[int, set[int]] = {}
    for row in await db.fetchall(
        "SELECT delivery_id, topic_id FROM delivery_topics WHERE delivery_id = ANY(?::bigint[])",
        ([d.id for d in items],),
    ):
        followed.setdefault(row[0], set()).add(row[1])
    matched: dict[str, set[int]] = {}
    suggested: dict[str, set[int]] = {}
    for row in await db.fetchall(
        "SELECT p.arxiv_id, m.topic_id, m.kind FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk"
        " WHERE p.arxiv_id = ANY(?::text[])",
        (sorted({d.paper.arxiv_id for d in items}),),
    ):
        (matched if row[2] == "exact" else suggested).setdefault(row[0], set()).add(row[1])
    guilds = sorted({CATALOG_GUILD, *(d.guild_id for d in items)})
    rows = [
        _topic(r)
        for r in await db.fetchall("SELECT * FROM topics WHERE guild_id = ANY(?::bigint[])", (guilds,))
    ]
    return name_card_topics(items, followed, matched, suggested, rows)

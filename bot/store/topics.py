"""Topics (catalog and per-server) and their materialised matches.

Names are compared by the rules in bot.models (`fold_name`, `topic_key`). A server's own topic stores its name's
key as its slug, so the database keeps keys unique per server.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from itertools import pairwise

import aiosqlite

from bot.models import CATALOG_GUILD, Paper, TopicRow, find_named, fold_name, topic_key
from bot.store.database import Database
from bot.store.papers import paper_filter, paper_from_row, to_ts
from bot.store.protocol import TopicNameTaken
from bot.store.topic_days import TopicDayCounts


def _topic(row: aiosqlite.Row) -> TopicRow:
    fields = ("id", "guild_id", "slug", "name", "description", "query", "parent_id")
    return TopicRow(*(row[name] for name in fields))


class TopicRepo(TopicDayCounts):
    db: Database  # this engine's own (its dialect's statements below)

    def __init__(self, db: Database) -> None:
        self.db = db

    async def save(
        self, *, guild_id: int, slug: str, name: str, description: str, query: str, at: datetime
    ) -> tuple[TopicRow, bool]:
        """Insert or update a topic by (guild, slug): the catalog's way, where the slug is the identity.
        Returns it and whether its query changed (or it is new). A server's own topics use `create`/`change`."""
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
        async with self.db.transaction() as conn:
            before = await self.db.fetchone(
                "SELECT query FROM topics WHERE guild_id = ? AND slug = ?", (guild_id, slug)
            )
            await conn.execute(
                "INSERT INTO topics (guild_id, slug, name, description, query, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, slug) DO UPDATE SET name = excluded.name,"
                " description = excluded.description, query = excluded.query, updated_at = excluded.updated_at",
                (guild_id, slug, name, description, query, to_ts(at), to_ts(at)),
            )
            row = await self.db.fetchone(
                "SELECT * FROM topics WHERE guild_id = ? AND slug = ?", (guild_id, slug)
            )
            assert row is not None  # just written
            changed = before is None or before["query"] != query
            if changed and before is not None:
                await conn.execute("DELETE FROM topic_matches WHERE topic_id = ?", (row["id"],))
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
        """A new topic of a server, its slug the name's key. Never replaces a topic: raises TopicNameTaken
        when the server has one whose name has the same key."""
        try:
            async with self.db.transaction() as conn:
                cursor = await conn.execute(
                    "INSERT INTO topics (guild_id, slug, name, description, query, created_at, updated_at,"
                    " parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (guild_id, topic_key(name), name, description, query, to_ts(at), to_ts(at), parent_id),
                )
                topic_id = cursor.lastrowid
        except sqlite3.IntegrityError:
            raise TopicNameTaken(name) from None
        created = await self.get(int(topic_id or 0))
        assert created is not None
        return created

    async def change(self, topic_id: int, *, query: str, at: datetime) -> tuple[TopicRow, bool]:
        """A new query for a topic; its recorded matches are dropped when the query differs (the caller matches
        the history again). Returns the topic and whether the query changed."""
        async with self.db.transaction() as conn:
            before = await self.get(topic_id)
            if before is None:
                raise LookupError(f"no topic {topic_id}")
            if before.query == query:
                return before, False
            await conn.execute(
                "UPDATE topics SET query = ?, updated_at = ? WHERE id = ?", (query, to_ts(at), topic_id)
            )
            await conn.execute("DELETE FROM topic_matches WHERE topic_id = ?", (topic_id,))
        changed = await self.get(topic_id)
        assert changed is not None
        return changed, True

    async def set_parent(self, topic_id: int, parent_id: int | None, at: datetime) -> bool:
        """Put a topic under another (None: at the top); returns whether that moved it. The caller checks the
        tree (bot/topic_tree.py) and recomputes the rows ancestors hold through it (rebuild_inherited).
        Raises LookupError for an unknown topic."""
        async with self.db.transaction() as conn:
            before = await self.get(topic_id)
            if before is None:
                raise LookupError(f"no topic {topic_id}")
            if before.parent_id == parent_id:
                return False
            await conn.execute(
                "UPDATE topics SET parent_id = ?, updated_at = ? WHERE id = ?",
                (parent_id, to_ts(at), topic_id),
            )
        return True

    async def get(self, topic_id: int) -> TopicRow | None:
        row = await self.db.fetchone("SELECT * FROM topics WHERE id = ?", (topic_id,))
        return _topic(row) if row else None

    async def own(self, guild_id: int) -> list[TopicRow]:
        """A server's own topics (none of the catalog's), by name."""
        rows = await self.db.fetchall("SELECT * FROM topics WHERE guild_id = ?", (guild_id,))
        return sorted((_topic(r) for r in rows), key=lambda t: fold_name(t.name))

    async def find(self, guild_id: int, name_or_slug: str) -> TopicRow | None:
        """The topic a server means by a name: its own before the catalog's, and within each the same name
        or slug before a name with the same key. So a catalog topic can never hide a server's own."""
        own = await self.own(guild_id) if guild_id != CATALOG_GUILD else []
        return find_named(own, name_or_slug) or find_named(await self.own(CATALOG_GUILD), name_or_slug)

    async def visible_to(self, guild_id: int) -> list[TopicRow]:
        """The catalog and the server's own topics, by name; a catalog topic named like one of the server's
        own (same key) is left out: inside that server the name means the server's topic."""
        own = await self.own(guild_id) if guild_id != CATALOG_GUILD else []
        taken = {topic_key(t.name) for t in own}
        catalog = [t for t in await self.own(CATALOG_GUILD) if topic_key(t.name) not in taken]
        return sorted([*own, *catalog], key=lambda t: fold_name(t.name))

    async def count_own(self, guild_id: int) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM topics WHERE guild_id = ?", (guild_id,))
        return int(row[0]) if row else 0

    async def lock_catalog(self) -> None:
        """SQLite's write transaction (BEGIN IMMEDIATE) already keeps every other writer waiting."""

    async def rekey_legacy(self) -> list[tuple[TopicRow, str]]:
        """Give the server topics queued by migration 0007 their key as slug (SQL has no Unicode case folding,
        so the migration only finds them). A key already taken in that server keeps the topic reachable by
        name with the topic's id appended. Returns (topic, new slug) for each topic changed."""
        rows = await self.db.fetchall(
            "SELECT t.* FROM topic_rekeys r JOIN topics t ON t.id = r.topic_id ORDER BY t.id"
        )
        changed = []
        async with self.db.transaction() as conn:
            for row in map(_topic, rows):
                slug = topic_key(row.name)
                taken = await self.db.fetchone(
                    "SELECT id FROM topics WHERE guild_id = ? AND slug = ? AND id != ?",
                    (row.guild_id, slug, row.id),
                )
                if taken is not None:
                    slug = f"{slug}-{row.id}"
                if slug != row.slug:
                    await conn.execute("UPDATE topics SET slug = ? WHERE id = ?", (slug, row.id))
                    changed.append((row, slug))
            await conn.execute("DELETE FROM topic_rekeys")
        return changed

    async def all(self) -> list[TopicRow]:
        return [_topic(r) for r in await self.db.fetchall("SELECT * FROM topics ORDER BY id")]

    async def delete(self, topic_id: int) -> None:
        await self.db.execute("DELETE FROM topics WHERE id = ?", (topic_id,))

    # ---- history still to match (topic_history_pending) ------------------------------------------------------

    async def queue_history(self, topic_ids: Sequence[int], at: datetime) -> None:
        """Remember that these topics' stored history is still to be matched (kept across restarts)."""
        await self.db.executemany(
            "INSERT OR IGNORE INTO topic_history_pending (topic_id, queued_at) VALUES (?, ?)",
            [(topic_id, to_ts(at)) for topic_id in topic_ids],
        )

    async def history_queue(self) -> list[int]:
        """Topics whose history is still to be matched, oldest request first."""
        rows = await self.db.fetchall(
            "SELECT topic_id FROM topic_history_pending ORDER BY queued_at, topic_id"
        )
        return [row[0] for row in rows]

    async def history_matched(self, topic_id: int) -> None:
        await self.db.execute("DELETE FROM topic_history_pending WHERE topic_id = ?", (topic_id,))

    async def add_matches(
        self, pairs: Sequence[tuple[int, str]], at: datetime, *, through: Sequence[tuple[int, str]] = ()
    ) -> int:
        """Record (topic_id, arxiv_id) matches of the topics' own queries, and (`through`) those an ancestor
        holds because a descendant's query matched, in one transaction. Returns how many own matches are new.
        A recorded match stays as it was, except that a row held through a descendant becomes the topic's own;
        pairs of a topic deleted meanwhile (a history match still running when /unfollow deleted it) are
        dropped."""
        if not pairs and not through:
            return 0
        async with self.db.transaction() as conn:
            before = conn.total_changes
            await conn.executemany(
                "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at, direct)"
                " SELECT t.id, p.published, p.pk, ?, 1 FROM papers p JOIN topics t ON t.id = ?"
                " WHERE p.arxiv_id = ? ON CONFLICT DO UPDATE SET direct = 1, kind = 'exact'"
                " WHERE direct = 0 OR kind = 'suggested'",
                [(to_ts(at), topic_id, arxiv_id) for topic_id, arxiv_id in pairs],
            )
            added = conn.total_changes - before
            await conn.executemany(
                "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at, direct)"
                " SELECT t.id, p.published, p.pk, ?, 0 FROM papers p JOIN topics t ON t.id = ?"
                " WHERE p.arxiv_id = ? ON CONFLICT DO UPDATE SET direct = 0, kind = 'exact' WHERE kind = 'suggested'",
                [(to_ts(at), topic_id, arxiv_id) for topic_id, arxiv_id in through],
            )
            return added

    async def add_suggestions(self, pairs: Sequence[tuple[int, str]], at: datetime) -> int:
        """Record (topic id, arxiv id) pairs the topic's learned scorer suggests (kind 'suggested'); a paper the
        topic already holds stays as it is. Returns how many are new."""
        if not pairs:
            return 0
        async with self.db.transaction() as conn:
            before = conn.total_changes
            await conn.executemany(
                "INSERT OR IGNORE INTO topic_matches (topic_id, published, paper_pk, matched_at, direct, kind)"
                " SELECT t.id, p.published, p.pk, ?, 1, 'suggested' FROM papers p JOIN topics t ON t.id = ?"
                " WHERE p.arxiv_id = ?",
                [(to_ts(at), topic_id, arxiv_id) for topic_id, arxiv_id in pairs],
            )
            return conn.total_changes - before

    async def replace_suggestions(self, topic_id: int, arxiv_ids: Sequence[str], at: datetime) -> int:
        """Make the topic's suggested papers exactly `arxiv_ids` (those it holds exactly stay exact), in one
        transaction: after its scorer was retrained and scanned the history. Returns how many it holds now."""
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
        """Of these papers, those the topics hold only as suggestions (no exact row for any of them)."""
        if not topic_ids or not arxiv_ids:
            return set()
        topics = ",".join("?" * len(topic_ids))
        rows = await self.db.fetchall(
            "SELECT p.arxiv_id FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk"
            f" WHERE m.topic_id IN ({topics}) AND p.arxiv_id IN ({','.join('?' * len(arxiv_ids))})"
            " GROUP BY p.arxiv_id HAVING MAX(m.kind = 'exact') = 0",
            (*topic_ids, *arxiv_ids),
        )
        return {r[0] for r in rows}

    async def rebuild_inherited(self, topic_id: int, descendants: Sequence[int], at: datetime) -> None:
        """Make the rows a topic holds through its descendants exactly the papers their own queries match:
        after a descendant's query, place or existence changed. No query is evaluated: the descendants' own
        rows are the truth. The topic's own rows are untouched."""
        marks = ",".join("?" * len(descendants))
        async with self.db.transaction() as conn:
            if not descendants:
                await conn.execute(
                    "DELETE FROM topic_matches WHERE topic_id = ? AND direct = 0 AND kind = 'exact'",
                    (topic_id,),
                )
                return
            # Only exact rows are inherited: a child's suggestions are its scorer's, the parent has its own.
            await conn.execute(
                "DELETE FROM topic_matches WHERE topic_id = ? AND direct = 0 AND kind = 'exact' AND paper_pk NOT IN"
                f" (SELECT paper_pk FROM topic_matches WHERE topic_id IN ({marks}) AND direct = 1 AND kind = 'exact')",
                (topic_id, *descendants),
            )
            await conn.execute(
                "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at, direct)"
                f" SELECT ?, published, paper_pk, ?, 0 FROM topic_matches WHERE topic_id IN ({marks})"
                " AND direct = 1 AND kind = 'exact' ON CONFLICT DO UPDATE SET direct = 0, kind = 'exact'"
                " WHERE kind = 'suggested'",
                (topic_id, to_ts(at), *descendants),
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
        """Each topic's suggested papers submitted (v1) in [start, end), in one query."""
        if not topic_ids:
            return {}
        rows = await self.db.fetchall(
            f"SELECT topic_id, COUNT(*) FROM topic_matches WHERE topic_id IN ({','.join('?' * len(topic_ids))})"
            " AND kind = 'suggested' AND published >= ? AND published < ? GROUP BY topic_id",
            (*topic_ids, to_ts(start), to_ts(end)),
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
        """Matches of each topic in each window between consecutive ascending `bounds` ([b0, b1), [b1, b2),
        ...), by v1 submission time: one query for any number of topics (a topic without matches gets zeros).
        A topic's count also takes, each paper once, the papers of the topics `including` lists for it."""
        if len(bounds) < 2:
            raise ValueError("counting needs at least two bounds")
        counts = {topic_id: [0] * (len(bounds) - 1) for topic_id in topic_ids}
        if not counts:
            return counts
        edges = [to_ts(b) for b in bounds]
        windows = ", ".join("SUM(published >= ? AND published < ?)" for _ in edges[1:])
        window_params = [e for pair in pairwise(edges) for e in pair]
        extra = {t: list(including[t]) for t in counts if including and including.get(t)}
        if not extra:
            rows = await self.db.fetchall(
                f"SELECT topic_id, {windows} FROM topic_matches WHERE topic_id IN ({','.join('?' * len(counts))})"
                " AND published >= ? AND published < ? AND kind = 'exact' GROUP BY topic_id",
                (*window_params, *counts, edges[0], edges[-1]),
            )
        else:
            members = [(t, m) for t in counts for m in (t, *extra.get(t, ()))]
            rows = await self.db.fetchall(
                f"WITH members (topic, member) AS (VALUES {','.join(['(?, ?)'] * len(members))})"
                f" SELECT topic, {windows} FROM (SELECT DISTINCT members.topic AS topic, m.published AS"
                " published, m.paper_pk FROM members JOIN topic_matches m ON m.topic_id = members.member"
                " WHERE m.published >= ? AND m.published < ? AND m.kind = 'exact') GROUP BY topic",
                (*(x for pair in members for x in pair), *window_params, edges[0], edges[-1]),
            )
        for row in rows:
            counts[row[0]] = [int(n) for n in tuple(row)[1:]]
        return counts

    async def followed_in(self, guild_id: int) -> list[TopicRow]:
        """The topics some channel of a server follows, each once, by name."""
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
        """The topic's papers (and, each once, those of the topics `including` names), newest first: the exact
        matches, and with `suggested` the scorer's suggestions too."""
        if limit < 0 or offset < 0:  # SQLite reads LIMIT -1 as "no limit"
            raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
        kinds = "" if suggested else " AND kind = 'exact'"
        if not including:
            rows = await self.db.fetchall(
                "SELECT p.* FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk WHERE m.topic_id = ?"
                f"{kinds} ORDER BY m.published DESC LIMIT ? OFFSET ?",
                (topic_id, limit, offset),
            )
        else:
            ids = [topic_id, *including]
            rows = await self.db.fetchall(
                "SELECT p.* FROM (SELECT paper_pk, MAX(published) AS published FROM topic_matches"
                f" WHERE topic_id IN ({','.join('?' * len(ids))}){kinds} GROUP BY paper_pk"
                " ORDER BY published DESC LIMIT ? OFFSET ?) m JOIN papers p ON p.pk = m.paper_pk"
                " ORDER BY m.published DESC",
                (*ids, limit, offset),
            )
        return [paper_from_row(r) for r in rows]

    async def count_candidates(
        self, fts: str | None, *, categories: Sequence[str] = (), since: datetime | None = None, cap: int
    ) -> int:
        """How many stored papers `candidates` would yield, counted up to `cap` (so asking costs at most
        `cap` rows however broad the prefilter is)."""
        where, params = paper_filter(categories=categories, since=since)
        if fts is None:
            sql = f"SELECT 1 FROM papers p WHERE 1{where} LIMIT ?"
        elif not where:  # the index alone (joining each row to its paper cost 210 ms for 50,000 at 1M)
            sql, params = "SELECT 1 FROM papers_fts WHERE papers_fts MATCH ? LIMIT ?", [fts]
        else:  # the full-text index drives, so the count stops at the cap
            sql = f"SELECT 1 FROM papers_fts JOIN papers p ON p.pk = papers_fts.rowid WHERE papers_fts MATCH ?{where} LIMIT ?"
            params.insert(0, fts)
        row = await self.db.fetchone(f"SELECT COUNT(*) FROM ({sql})", (*params, cap))
        return int(row[0]) if row else 0

    async def candidates(
        self,
        fts: str | None,
        *,
        categories: Sequence[str] = (),
        since: datetime | None = None,
        batch: int = 5000,
    ) -> AsyncIterator[list[Paper]]:
        """Stored papers that may match: the FTS5 prefilter when there is one, else every paper (of the
        categories, when named). Yields batches, so a history of a million papers never sits in memory."""
        where, params = paper_filter(categories=categories, since=since)
        if fts is not None:
            where += " AND p.pk IN (SELECT rowid FROM papers_fts WHERE papers_fts MATCH ?)"
            params.append(fts)
        last_pk = 0
        while True:
            rows = await self.db.fetchall(
                f"SELECT p.* FROM papers p WHERE p.pk > ?{where} ORDER BY p.pk LIMIT ?",
                (last_pk, *params, batch),
            )
            if not rows:
                return
            last_pk = rows[-1]["pk"]
            yield [paper_from_row(r) for r in rows]

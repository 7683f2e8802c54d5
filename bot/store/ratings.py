"""Ratings: members' 👍 / 👎 on a paper for one topic of their server, one row per (server, topic, paper,
member), changeable and resettable by the server. Its SQL runs on SQLite and PostgreSQL alike (bot/store/sql.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.models import RatedPaper, TopicRow, Vote
from bot.store.papers import from_ts, to_ts
from bot.store.sql import SqlDatabase, marks
from bot.store.topics import _topic


class RatingRepo:
    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def rate(
        self, *, guild_id: int, topic_id: int, arxiv_id: str, member_id: int, vote: Vote, at: datetime
    ) -> Vote | None:
        """Record a member's vote (replacing their earlier one) and return the earlier one (None: first).
        Raises LookupError when the topic or the paper is not stored (deleted meanwhile)."""
        async with self.db.transaction():
            found = await self.db.fetchone(
                "SELECT p.pk, (SELECT id FROM topics WHERE id = ?) AS topic,"
                " (SELECT vote FROM ratings r WHERE r.guild_id = ? AND r.topic_id = ? AND r.paper_pk = p.pk"
                " AND r.member_id = ?) AS earlier FROM papers p WHERE p.arxiv_id = ?",
                (topic_id, guild_id, topic_id, member_id, arxiv_id),
            )
            if found is None or found["topic"] is None:
                raise LookupError(f"topic {topic_id} or paper {arxiv_id} is not stored")
            if found["earlier"] != vote:  # an unchanged vote writes nothing (a click repeated in a burst)
                await self.db.execute(
                    "INSERT INTO ratings (guild_id, topic_id, paper_pk, member_id, vote, rated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, topic_id, paper_pk, member_id)"
                    " DO UPDATE SET vote = excluded.vote, rated_at = excluded.rated_at",
                    (guild_id, topic_id, found["pk"], member_id, vote, to_ts(at)),
                )
        earlier = found["earlier"]
        return None if earlier is None else (1 if earlier > 0 else -1)

    async def rated(self, guild_id: int, topic_id: int) -> list[RatedPaper]:
        """The papers a server's members rated for a topic, each with its votes, last rated first."""
        rows = await self.db.fetchall(
            "SELECT p.arxiv_id, p.title, SUM(CASE WHEN r.vote > 0 THEN 1 ELSE 0 END) AS up,"
            " SUM(CASE WHEN r.vote < 0 THEN 1 ELSE 0 END) AS down, MAX(r.rated_at) AS last"
            " FROM ratings r JOIN papers p ON p.pk = r.paper_pk WHERE r.topic_id = ? AND r.guild_id = ?"
            " GROUP BY p.pk, p.arxiv_id, p.title ORDER BY last DESC, p.arxiv_id",
            (topic_id, guild_id),
        )
        return [RatedPaper(r[0], r[1], int(r[2]), int(r[3]), from_ts(r[4])) for r in rows]

    async def counts(self, guild_id: int, topic_ids: Sequence[int]) -> dict[int, int]:
        """How many ratings each topic holds from a server (topics without any get 0), in one round trip."""
        found = dict.fromkeys(topic_ids, 0)
        if topic_ids:
            rows = await self.db.fetchall(
                f"SELECT topic_id, COUNT(*) FROM ratings WHERE guild_id = ? AND topic_id IN ({marks(topic_ids)})"
                " GROUP BY topic_id",
                (guild_id, *topic_ids),
            )
            found.update({int(r[0]): int(r[1]) for r in rows})
        return found

    async def reset(self, guild_id: int, topic_id: int) -> int:
        """Forget a server's ratings of a topic; returns how many there were."""
        return await self.db.execute(
            "DELETE FROM ratings WHERE guild_id = ? AND topic_id = ?", (guild_id, topic_id)
        )

    async def rated_topics(self) -> list[tuple[int, int]]:
        """Every (server, topic) holding ratings: the views the next retraining builds."""
        rows = await self.db.fetchall("SELECT DISTINCT guild_id, topic_id FROM ratings ORDER BY 1, 2")
        return [(int(r[0]), int(r[1])) for r in rows]

    async def followed_holding(
        self, guild_id: int, arxiv_id: str, channel_ids: Sequence[int]
    ) -> list[TopicRow]:
        """The topics a server follows that hold the paper (matched or suggested, or posted by the server's own
        ratings), those followed in one of
        `channel_ids` (the channel of a card, and its forum) when there are any, else those followed anywhere
        in the server; by id. What a 👍 / 👎 on a card of that channel rates."""
        here_ids = [int(i) for i in channel_ids] or [-1]  # -1: no channel (ids are never negative)
        rows = await self.db.fetchall(
            f"SELECT t.id, t.guild_id, t.slug, t.name, t.description, t.query, t.parent_id,"
            f" MAX(CASE WHEN f.channel_id IN ({marks(here_ids)}) THEN 1 ELSE 0 END) AS here FROM topics t"
            " JOIN follows f ON f.topic_id = t.id AND f.guild_id = ?"
            " WHERE t.id IN (SELECT m.topic_id FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk"
            " WHERE p.arxiv_id = ?)"
            # or the server's ratings put it into one of its channels (a paper they lifted)
            " OR t.id IN (SELECT dt.topic_id FROM deliveries d JOIN delivery_topics dt ON dt.delivery_id = d.id"
            " JOIN papers p ON p.pk = d.paper_pk WHERE p.arxiv_id = ? AND d.guild_id = ?)"
            " GROUP BY t.id, t.guild_id, t.slug, t.name, t.description, t.query, t.parent_id ORDER BY t.id",
            (*here_ids, guild_id, arxiv_id, arxiv_id, guild_id),
        )
        here = [r for r in rows if r["here"]]
        return [_topic(r) for r in (here or rows)]

"""Each topic's exact matches per day, kept in topic_day_counts: what /momentum's ranking adds up, so its cost is a
row per topic and day, not every match of its weeks. One SQL for both engines (typed over bot/store/sql.SqlDatabase)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.store.papers import DAY
from bot.store.sql import SqlDatabase, marks


class TopicDayCounts:
    """Part of the topic repository: the per-day counts of its matches."""

    db: SqlDatabase

    async def day_counts(self, topic_ids: Sequence[int], first: int, last: int) -> dict[int, list[int]]:
        """Each topic's exact matches on each unix day in [first, last), from topic_day_counts: days not kept
        yet are counted in one grouped query and kept (a trigger forgets a day when one of its matches is
        added, changed or removed). So a ranking over weeks reads a row per topic and day, not every match."""
        counts = {topic_id: [0] * max(0, last - first) for topic_id in topic_ids}
        if not counts or last <= first:
            return counts
        known = {
            (r[0], r[1]): r[2]
            for r in await self.db.fetchall(
                f"SELECT topic_id, day, papers FROM topic_day_counts WHERE topic_id IN ({marks(counts)})"
                " AND day >= ? AND day < ?",
                (*counts, first, last),
            )
        }
        missing = [(t, d) for t in counts for d in range(first, last) if (t, d) not in known]
        if missing and self.db.writing:
            # A command never waits behind a write (a poll, a history batch): count on a reader, keep nothing.
            known.update(await self._count(missing))
        elif missing:
            # Counted and kept in one write transaction, so a match stored meanwhile cannot be missed by both.
            async with self.db.transaction():
                counted = await self._count(missing)
                await self.db.executemany(
                    "INSERT INTO topic_day_counts (topic_id, day, papers) VALUES (?, ?, ?)"
                    " ON CONFLICT (topic_id, day) DO UPDATE SET papers = excluded.papers",
                    [(t, d, n) for (t, d), n in counted.items()],
                )
            known.update(counted)
        for (topic_id, day), papers in known.items():
            counts[topic_id][day - first] = int(papers)
        return counts

    async def _count(self, missing: Sequence[tuple[int, int]]) -> dict[tuple[int, int], int]:
        """The exact matches of each (topic, day) asked, counted in one grouped query (integer division: the
        publication times are whole seconds on both engines)."""
        lo, hi = min(d for _, d in missing), max(d for _, d in missing) + 1
        topics = sorted({t for t, _ in missing})
        counted = dict.fromkeys(missing, 0)
        for topic_id, day, papers in await self.db.fetchall(
            "SELECT topic_id, published / 86400 AS day, COUNT(*) FROM topic_matches"
            f" WHERE topic_id IN ({marks(topics)}) AND published >= ? AND published < ?"
            " AND kind = 'exact' GROUP BY topic_id, day",
            (*topics, lo * DAY, hi * DAY),
        ):
            if (topic_id, day) in counted:
                counted[(topic_id, day)] = papers
        return counted

"""How topics are moving: one topic's momentum, a list of topics' momenta, and a server's topics ranked by
growth. However many topics are asked for, their window counts come from one query and their weekly series
from another; the share's denominator is counted once per distinct set of categories (cached by day)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from bot.clock import Clock
from bot.models import CATALOG_GUILD, TopicRow
from bot.momentum import (
    SERIES_WEEKS,
    Momentum,
    WeekCount,
    check_weeks,
    rank_by_growth,
    week_start,
    window_bounds,
)
from bot.store import Store
from bot.topics.index import TopicIndex, categories_in

DAY = 86_400  # seconds: the store keeps each topic's matches per unix day


def _seconds(moment: datetime) -> int:
    return int(moment.timestamp())


class MomentumService:
    def __init__(self, store: Store, index: TopicIndex, clock: Clock, watched: Sequence[str]) -> None:
        self.store = store
        self.index = index
        self.clock = clock
        self.watched = tuple(watched)  # the share's categories for a topic that names none

    async def topic(self, topic: TopicRow, weeks: int = 4, guild_id: int = CATALOG_GUILD) -> Momentum:
        """A topic's momentum now; its share is of the categories its query names, else of all watched ones."""
        [momentum] = await self.topics([topic], weeks, guild_id)
        return momentum

    def history_matched(self, topic: TopicRow) -> float | None:
        """How much of the topic's stored history has been matched (0.0-1.0) while that runs in the background
        (its counts are low until then); None when it is done."""
        progress = self.index.history_progress(topic.id)
        return progress.share if progress is not None else None

    async def ranking(
        self, topics: Sequence[TopicRow], weeks: int = 4, guild_id: int = CATALOG_GUILD
    ) -> list[Momentum]:
        """The topics' momenta, fastest-growing first (a server's: TopicService.followed_in)."""
        return rank_by_growth(await self.topics(topics, weeks, guild_id))

    async def topics(
        self, topics: Sequence[TopicRow], weeks: int = 4, guild_id: int = CATALOG_GUILD
    ) -> list[Momentum]:
        """The momentum of each topic as server `guild_id` sees it, in the order given. A topic counts the
        papers of its descendants (stored with it); in a server, a catalog topic also counts the server's own
        topics under it."""
        check_weeks(weeks)
        if not topics:
            return []
        now = self.clock.now()
        prev_start, start, end = window_bounds(now, weeks)
        ids = [t.id for t in topics]
        including = {t.id: self.index.within(t.id, guild_id) for t in topics}
        windows = await self._counts(ids, [prev_start, start, end], including)
        first = week_start(now) - timedelta(weeks=SERIES_WEEKS - 1)
        edges = [first + timedelta(weeks=i) for i in range(SERIES_WEEKS)]
        weekly = await self._counts(ids, [*edges, now + timedelta(seconds=1)], including)
        suggested = await self.store.topics.count_suggested(ids, start, end)  # shown beside, not counted
        named = await self._topic_categories(topics)
        all_new: dict[tuple[str, ...], int] = {}
        momenta = []
        for topic in topics:
            own = named[topic.id]
            categories = own or self.watched
            if categories not in all_new:
                all_new[categories] = await self.store.papers.count_in_categories(categories, start, end)
            previous, current = windows[topic.id]
            series = [
                WeekCount(edge.date(), count, partial=(i == SERIES_WEEKS - 1))
                for i, (edge, count) in enumerate(zip(edges, weekly[topic.id], strict=True))
            ]
            momenta.append(
                Momentum(
                    topic=topic.name,
                    weeks=weeks,
                    window_start=start,
                    window_end=end,
                    current=current,
                    previous=previous,
                    all_new=all_new[categories],
                    categories=categories,
                    name_categories=bool(own),
                    series=tuple(series),
                    suggested=suggested.get(topic.id, 0),
                )
            )
        return momenta

    async def _counts(
        self, ids: Sequence[int], bounds: Sequence[datetime], including: Mapping[int, Sequence[int]]
    ) -> dict[int, list[int]]:
        """Each topic's matches per window between consecutive bounds: whole days added up from the store's
        per-day counts (a row per topic and day, however many papers the weeks hold), the rest of the last
        day counted directly. A topic counting other topics' papers too (each paper once) counts directly."""
        if any(including.values()) or any(_seconds(b) % DAY for b in bounds[:-1]):
            return await self.store.topics.counts_between(ids, bounds, including=including)
        first, last = _seconds(bounds[0]) // DAY, _seconds(bounds[-1]) // DAY
        days = await self.store.topics.day_counts(ids, first, last)
        midnight = datetime.fromtimestamp(last * DAY, UTC)
        tail = (
            await self.store.topics.counts_between(ids, [midnight, bounds[-1]])
            if bounds[-1] > midnight
            else {}
        )
        counts = {}
        for topic_id in ids:
            per_day = days[topic_id]
            windows = [
                sum(per_day[_seconds(lo) // DAY - first : min(_seconds(hi) // DAY, last) - first])
                for lo, hi in pairwise(bounds)
            ]
            windows[-1] += tail[topic_id][0] if tail else 0
            counts[topic_id] = windows
        return counts

    async def _topic_categories(self, topics: Sequence[TopicRow]) -> dict[int, tuple[str, ...]]:
        """The stored categories each topic's query restricts it to (cat: terms), () when it names none."""
        queries = {t.id: self.index.query(t.id) for t in topics}
        bound = {topic_id: q for topic_id, q in queries.items() if q is not None and q.categories()}
        stored = await self.store.papers.category_names() if bound else []  # read once for all the topics
        return {t: tuple(categories_in(bound[t], stored) or ()) if t in bound else () for t in queries}

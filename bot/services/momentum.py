"""How topics are moving: one topic's momentum, a list of topics' momenta, and a server's topics ranked by
growth. However many topics are asked for, their window counts come from one query and their weekly series
from another; the share's denominator is counted once per distinct set of categories (cached by day)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

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
        windows = await self.store.topics.counts_between(ids, [prev_start, start, end], including=including)
        first = week_start(now) - timedelta(weeks=SERIES_WEEKS - 1)
        edges = [first + timedelta(weeks=i) for i in range(SERIES_WEEKS)]
        weekly = await self.store.topics.counts_between(
            ids, [*edges, now + timedelta(seconds=1)], including=including
        )
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

    async def _topic_categories(self, topics: Sequence[TopicRow]) -> dict[int, tuple[str, ...]]:
        """The stored categories each topic's query restricts it to (cat: terms), () when it names none."""
        queries = {t.id: self.index.query(t.id) for t in topics}
        bound = {topic_id: q for topic_id, q in queries.items() if q is not None and q.categories()}
        stored = await self.store.papers.category_names() if bound else []  # read once for all the topics
        return {t: tuple(categories_in(bound[t], stored) or ()) if t in bound else () for t in queries}

"""Each topic's matches per day, kept in the store for /momentum (topic_day_counts), on both back ends: the
counts kept are the matches' own, and stay so as matches are added, upgraded, moved or dropped."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.clock import FakeClock
from bot.store import Store
from tests.factories import make_paper

GUILD = 7
DAY = 86_400


def day_of(moment: datetime) -> int:
    return int(moment.timestamp()) // DAY


async def test_day_counts_are_the_matches_per_day_and_follow_every_change(
    store: Store, clock: FakeClock
) -> None:
    now = clock.now()
    today = day_of(now)
    published = [now - timedelta(days=d, hours=1) for d in (1, 1, 3, 3, 3)]
    papers = [make_paper(i, title=f"Wheeled robot {i}", published=p) for i, p in enumerate(published, 1)]
    await store.papers.upsert(papers, seen_at=now)
    robots = await store.topics.create(
        guild_id=GUILD, name="Robots", description="", query="ti:robot", at=now
    )
    other = await store.topics.create(guild_id=GUILD, name="Other", description="", query="ti:other", at=now)
    await store.topics.add_matches([(robots.id, p.arxiv_id) for p in papers[:4]], now)
    await store.topics.add_suggestions([(other.id, papers[0].arxiv_id)], now)  # suggestions are not counted
    first = day_of(published[2])
    span = (first, today + 1)
    expected = {robots.id: [0] * (today + 1 - first), other.id: [0] * (today + 1 - first)}
    expected[robots.id][day_of(published[0]) - first] = 2
    expected[robots.id][day_of(published[2]) - first] = 2
    assert await store.topics.day_counts([robots.id, other.id], *span) == expected
    assert await store.topics.day_counts([robots.id, other.id], *span) == expected  # read back as kept

    await store.topics.add_matches([(robots.id, papers[4].arxiv_id)], now)  # a new match of a kept day
    await store.topics.add_matches([(other.id, papers[0].arxiv_id)], now)  # a suggestion becomes exact
    expected[robots.id][day_of(published[4]) - first] = 3
    expected[other.id][day_of(published[0]) - first] = 1
    assert await store.topics.day_counts([robots.id, other.id], *span) == expected

    await store.topics.change(robots.id, query="ti:wheeled", at=now)  # its matches go
    assert await store.topics.day_counts([robots.id], *span) == {robots.id: [0] * (today + 1 - first)}
    assert await store.topics.day_counts([robots.id], today, today) == {robots.id: []}

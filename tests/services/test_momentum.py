"""Momentum of many topics: the same answer as one topic at a time, from a fixed number of queries however
many topics there are, the share of the categories a topic names, and a server's ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.clock import FakeClock
from bot.models import TopicRow
from bot.momentum import window_bounds
from bot.store import Store
from tests.factories import make_paper
from tests.services.world import World

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)  # a Sunday: the last complete day is Saturday the 28th


async def topic_with_papers(world: World, n: int, current: int, previous: int, guild: int = 1) -> TopicRow:
    """Topic n of a server, whose word is in `current` papers of the last four weeks and `previous` of the four
    before."""
    _, start, _ = window_bounds(NOW, 4)
    word = f"zeta{n}"
    papers = [
        make_paper(n * 1000 + i, title=f"On {word} {i}", published=start + timedelta(days=1, hours=i))
        for i in range(current)
    ] + [
        make_paper(n * 1000 + 500 + i, title=f"On {word} {i}", published=start - timedelta(days=2, hours=i))
        for i in range(previous)
    ]
    await world.intake.store_papers(papers, announce=False)
    topic, _ = await world.services.topics.save_custom(guild, f"Topic {n}", f"ti:{word}")
    return topic


async def statements_of(store: Store) -> list[str]:
    """Every SQL statement the store runs from now on, on either connection."""
    seen: list[str] = []
    for conn in store.db.connections():
        await conn.set_trace_callback(seen.append)
    return seen


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


async def test_many_topics_in_as_many_queries_as_one(world: World) -> None:
    # in twelve servers: a server creates at most ten topics an hour
    topics = [await topic_with_papers(world, n, n + 1, 2 * n, guild=100 + n) for n in range(12)]
    momentum = world.services.momentum
    alone = [await momentum.topic(t) for t in topics]  # and the day counts are cached now

    seen = await statements_of(world.store)
    await momentum.topic(topics[0])
    one = len(seen)
    seen.clear()
    together = await momentum.topics(topics)
    assert len(seen) == one  # not one more query per topic
    assert together == alone
    assert [(m.current, m.previous) for m in together] == [(n + 1, 2 * n) for n in range(12)]


async def test_the_share_is_of_the_categories_a_topic_names(world: World) -> None:
    _, start, _ = window_bounds(NOW, 4)
    robots = [
        make_paper(i, title=f"Grasping {i}", categories=("cs.RO",), primary_category="cs.RO", published=start)
        for i in range(3)
    ]
    others = [make_paper(10 + i, title=f"Grasping maps {i}", published=start) for i in range(5)]
    await world.intake.store_papers(robots + others, announce=False)
    named, _ = await world.services.topics.save_custom(1, "Robot grasping", "cat:CS.ro AND ti:grasping")
    plain, _ = await world.services.topics.save_custom(1, "Grasping", "ti:grasping")
    by_category, everywhere = await world.services.momentum.topics([named, plain])
    assert (by_category.current, by_category.all_new, by_category.categories) == (3, 3, ("cs.RO",))
    assert by_category.name_categories and "of all new papers in cs.RO" in by_category.sentence()
    # the watched categories: the five cs.LG papers (the robots' cs.RO is not watched)
    assert (everywhere.current, everywhere.all_new, everywhere.name_categories) == (8, 5, False)


async def test_a_servers_followed_topics_ranked_by_growth(world: World) -> None:
    tiny = await topic_with_papers(world, 1, current=3, previous=0)
    shrinking = await topic_with_papers(world, 2, current=10, previous=30)
    growing = await topic_with_papers(world, 3, current=30, previous=10)
    await topic_with_papers(world, 4, current=50, previous=1)  # not followed: not ranked
    follows = world.services.follows
    for topic in (shrinking, tiny, growing):
        await follows.follow(await follows.plan(1, 10, topic.name))
    followed = await world.services.topics.followed_in(1)
    assert [t.name for t in followed] == ["Topic 1", "Topic 2", "Topic 3"]
    ranked = await world.services.momentum.ranking(followed)
    assert [m.topic for m in ranked] == ["Topic 3", "Topic 2", "Topic 1"]  # the tiny one last
    assert await world.services.topics.followed_in(2) == []


async def test_a_ranking_adds_up_kept_day_counts_and_counts_a_new_match_at_once(world: World) -> None:
    topics = [await topic_with_papers(world, n, n + 2, n, guild=200 + n) for n in range(3)]
    momentum = world.services.momentum
    first = await momentum.ranking(topics)  # counts each topic's days once, and keeps them
    seen = await statements_of(world.store)
    again = await momentum.ranking(topics)
    assert again == first
    day_scans = [s for s in seen if "FROM topic_matches" in s and "GROUP BY topic_id, day" in s]
    assert day_scans == [] and any("topic_day_counts" in s for s in seen)  # a row per topic and day
    _, start, _ = window_bounds(NOW, 4)
    late = make_paper(9_999, title="On zeta0 again", published=start + timedelta(days=3))
    await world.intake.store_papers([late], announce=False)  # its day was kept: it is counted again
    after = {m.topic: m.current for m in await momentum.ranking(topics)}
    assert after == {m.topic: m.current + (m.topic == "Topic 0") for m in first}

"""A server's topic matched in the background (TopicIndex.match_later) whose query changes midway: the old query's
match stops before its next write, the topic stays queued, and it ends up holding its new query's matches only."""

from __future__ import annotations

import asyncio

import pytest

from bot.clock import FakeClock
from bot.services.topics import TopicLimits, TopicService
from bot.store import Store
from bot.topics.index import HISTORY_BATCH, TopicIndex
from tests.factories import make_paper

pytestmark = pytest.mark.both_back_ends  # through the Store protocol only

BOUND = 30.0
GUILD = 5


async def test_a_query_changed_midway_is_matched_again_and_only_its_matches_stay(
    store: Store, clock: FakeClock
) -> None:
    tapirs = [make_paper(n, title=f"Tapir foraging {n}") for n in range(1, 2 * HISTORY_BATCH + 501)]
    okapis = [make_paper(5000 + n, title=f"Okapi stripes {n}") for n in range(3)]
    for start in range(0, len(tapirs), 1000):
        await store.papers.upsert(tapirs[start : start + 1000], seen_at=clock.now())
    await store.papers.upsert(okapis, seen_at=clock.now())
    index = TopicIndex(store, clock)
    await index.start([], history_later=True)
    # A store of tapirs only: the topic may cover them all.
    topics = TopicService(store, index, clock, TopicLimits(broad_floor=10 * HISTORY_BATCH))
    topic, _ = await topics.save(await topics.plan_custom(GUILD, "Animals", "ti:tapir"), history_later=True)
    progress = index.history_progress(topic.id)
    assert progress is not None
    while progress.checked < HISTORY_BATCH:  # the first batch of tapirs is written
        progress.changed.clear()
        await asyncio.wait_for(progress.changed.wait(), BOUND)

    await topics.save(await topics.plan_custom(GUILD, "Animals", "ti:okapi"), history_later=True)
    await asyncio.wait_for(index.settled(topic.id), BOUND)
    await asyncio.wait_for(index.catch_up(), BOUND)  # whatever the workers left: nothing
    assert sorted(await store.topics.matched_ids(topic.id)) == sorted(p.arxiv_id for p in okapis)
    assert await store.topics.history_queue() == [] and index.history_progress(topic.id) is None
    await index.stop()

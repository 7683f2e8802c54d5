"""Catalog history matched after the start, in chunks: queued in the store (a restart resumes it), with progress
that commands can show, and the event loop free between two chunks."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.store import Store
from bot.topics.catalog import load_catalog
from bot.topics.index import HISTORY_BATCH, TopicIndex
from tests.factories import GRPO, ROBOT, rl_paper

pytestmark = pytest.mark.both_back_ends  # through the Store protocol only

RL = "RL Post-Training"


async def test_a_start_that_leaves_the_history_for_later_answers_first_and_a_restart_resumes_it(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    catalog = load_catalog()
    index = TopicIndex(store, clock)
    await index.start(catalog, history_later=True)
    grpo = await store.topics.find(0, "Group Relative Policy Optimization")
    assert grpo is not None
    assert await store.topics.latest_papers(grpo.id, 10) == []  # not matched yet: the start did not wait
    queued = await store.topics.history_queue()
    assert grpo.id in queued and len(queued) == len(catalog)
    progress = index.history_progress(grpo.id)
    assert progress is not None and progress.share == 0.0
    catching_up = index.catching_up()
    assert catching_up is not None and catching_up.topics == len(catalog)

    # The process stops before matching: the next start finds the queue (nothing in the catalog changed)
    restarted = TopicIndex(store, clock)
    await restarted.start(catalog, history_later=True)
    assert await store.topics.history_queue() == queued
    assert await restarted.catch_up() > 0
    assert [p.arxiv_id for p in await store.topics.latest_papers(grpo.id, 10)] == [GRPO.arxiv_id]
    rl = await store.topics.find(0, RL)  # GRPO's parent holds it through its child, rebuilt after the match
    assert rl is not None and GRPO.arxiv_id in [
        p.arxiv_id for p in await store.topics.latest_papers(rl.id, 10)
    ]
    assert await store.topics.history_queue() == []
    assert restarted.history_progress(grpo.id) is None and restarted.catching_up() is None


async def test_history_is_matched_a_batch_at_a_time_with_progress_in_between(
    store: Store, clock: FakeClock
) -> None:
    papers = [rl_paper(n) for n in range(1, 2 * HISTORY_BATCH + 501)]
    for start in range(0, len(papers), 1000):
        await store.papers.upsert(papers[start : start + 1000], seen_at=clock.now())
    index = TopicIndex(store, clock)
    await index.start([t for t in load_catalog() if t.name == RL], history_later=True)
    rl = await store.topics.find(0, RL)
    assert rl is not None
    progress = index.history_progress(rl.id)
    assert progress is not None
    seen: list[tuple[int, int, int]] = []  # (checked, total, matches stored) at each step

    async def watch() -> None:
        while True:
            progress.changed.clear()
            await progress.changed.wait()
            stored = await store.topics.count_matches(
                rl.id, papers[-1].published, papers[0].published + timedelta(seconds=1)
            )
            seen.append((progress.checked, progress.total, stored))

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0)
    try:
        await index.catch_up()
    finally:
        watcher.cancel()
    total = len(papers)
    # counted first, then each batch committed on its own: the watcher (a command) ran between them
    assert seen[0] == (0, total, 0)
    assert [c for c, _, _ in seen[1:4]] == [HISTORY_BATCH, 2 * HISTORY_BATCH, total]
    assert [m for _, _, m in seen[1:4]] == [HISTORY_BATCH, 2 * HISTORY_BATCH, total]

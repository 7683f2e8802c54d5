"""The intake, the one write path for papers: stored, matched and (when announced) queued in one transaction
together with the caller's own writes, on a real SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.clock import FakeClock
from bot.intake import Intake
from bot.store import Store
from tests.factories import make_paper
from tests.services.world import World, services_world

GUILD, CHANNEL = 7, 70
RL_PAPER = make_paper(1, title="GRPO post-training of language models")
OTHER = make_paper(2, title="Graph colouring bounds", abstract="We colour graphs.")


@pytest.fixture
async def world(store: Store, clock: FakeClock) -> AsyncIterator[World]:
    async with services_world(store, clock) as built:
        yield built


async def intake_following(world: World) -> tuple[Intake, int]:
    """The intake, with one topic (ti:GRPO) that one channel follows."""
    topic, _ = await world.services.topics.save_custom(GUILD, "GRPO", "ti:GRPO")
    follows = world.services.follows
    await follows.follow(await follows.plan(GUILD, CHANNEL, "GRPO"))
    return world.intake, topic.id


async def test_announced_papers_are_stored_matched_and_queued_for_the_following_channels(
    world: World,
) -> None:
    intake, topic_id = await intake_following(world)
    store = world.store
    report = await intake.store_papers([RL_PAPER, OTHER], announce=True)
    assert sorted(report.new) == sorted([RL_PAPER.arxiv_id, OTHER.arxiv_id]) and report.updated == []
    assert dict(report.matches) == {RL_PAPER.arxiv_id: {topic_id}} and report.queued == 1
    assert await store.topics.latest_papers(topic_id, 10) == [RL_PAPER]
    [queued] = await store.deliveries.for_channel(CHANNEL, mode="each", now=None)
    assert queued.paper == RL_PAPER and queued.topics == ("GRPO",)

    # A new version updates the stored paper and is matched again, but is never posted a second time.
    v2 = make_paper(1, title="GRPO post-training of language models, revised", version=2)
    again = await intake.store_papers([v2], announce=True)
    assert again.new == [] and again.updated == [RL_PAPER.arxiv_id]
    assert dict(again.matches) == {RL_PAPER.arxiv_id: {topic_id}} and again.queued == 0
    assert await store.papers.get(RL_PAPER.arxiv_id) == v2


async def test_history_is_stored_and_matched_but_never_queued(world: World) -> None:
    intake, topic_id = await intake_following(world)
    store = world.store
    report = await intake.store_papers([RL_PAPER, OTHER], announce=False)
    assert report.queued == 0 and dict(report.matches) == {RL_PAPER.arxiv_id: {topic_id}}
    assert await store.topics.latest_papers(topic_id, 10) == [RL_PAPER]
    assert await store.deliveries.counts(GUILD) == {}


async def test_the_callers_writes_share_the_transaction(world: World) -> None:
    intake, topic_id = await intake_following(world)
    store, clock = world.store, world.clock
    window = (clock.now(), clock.now())
    await store.backfill.plan("job", [window])

    async def mark_then_die() -> None:
        await store.backfill.mark_done("job", window, 2)
        raise RuntimeError("process died here")

    with pytest.raises(RuntimeError):
        await intake.store_papers([RL_PAPER, OTHER], announce=True, also=mark_then_die)
    # Nothing of it is kept: no paper, no match, no post, and the window is not done.
    assert await store.papers.count() == 0 and await store.topics.latest_papers(topic_id, 10) == []
    assert await store.deliveries.counts(GUILD) == {}
    assert [w.done for w in await store.backfill.windows("job")] == [False]

    async def mark() -> None:
        await store.backfill.mark_done("job", window, 2)

    await intake.store_papers([RL_PAPER, OTHER], announce=False, also=mark)
    assert await store.papers.count() == 2 and [w.done for w in await store.backfill.windows("job")] == [True]


async def test_a_page_without_papers_still_runs_the_callers_writes(world: World) -> None:
    intake, _ = await intake_following(world)
    ran: list[bool] = []

    async def note() -> None:
        ran.append(True)

    report = await intake.store_papers([], announce=True, also=note)
    assert ran == [True] and (report.new, report.updated, report.queued) == ([], [], 0)

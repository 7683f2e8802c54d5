"""What /status shows: every source's health, the papers stored, and one server's posts and broken follows."""

from __future__ import annotations

from datetime import timedelta

from bot.models import SkippedEntry
from tests.factories import make_paper
from tests.services.world import World


async def test_a_servers_status_shows_its_own_posts_and_broken_follows_only(world: World) -> None:
    store, clock, status = world.store, world.clock, world.services.status
    fresh = await status.of_server(1)
    assert (fresh.sources, fresh.papers, fresh.deliveries, fresh.broken) == ([], 0, {}, [])
    assert fresh.poll_interval == timedelta(minutes=30) and fresh.now == clock.now()

    follows = world.services.follows
    for guild, channel in ((1, 10), (1, 11), (2, 20)):
        await follows.follow(await follows.plan(guild, channel, "Kalman", query="ti:kalman"))
    await world.intake.store_papers([make_paper(1, title="Kalman filters")], announce=True)
    await store.follows.mark_broken(11, "Missing Access", clock.now())
    await store.sources.record_failure("arxiv-api:cs.LG", clock.now(), "arXiv did not answer")
    await store.sources.record_skipped("backfill:cs.LG", [SkippedEntry("2611.0", "no date")], clock.now())

    one = await status.of_server(1)
    assert one.papers == 1 and one.deliveries == {"pending": 2}
    assert [(f.channel_id, f.broken_reason) for f in one.broken] == [(11, "Missing Access")]
    assert [(s.source, s.last_error) for s in one.sources] == [("arxiv-api:cs.LG", "arXiv did not answer")]
    assert [s.source for s in one.skipped_elsewhere] == ["backfill:cs.LG"]
    two = await status.of_server(2)
    assert two.deliveries == {"pending": 1} and two.broken == []


async def test_papers_per_category_and_week_for_the_command_line(world: World) -> None:
    now = world.clock.now()
    papers = [make_paper(i, published=now - timedelta(weeks=i)) for i in range(4)]
    await world.intake.store_papers(papers, announce=False)
    status = world.services.status
    assert await status.papers_stored() == 4
    rows = await status.weekly_category_counts(2)
    assert {category for _, category, _ in rows} == {"cs.AI", "cs.LG"}
    assert sum(n for _, category, n in rows if category == "cs.LG") in (
        2,
        3,
    )  # the oldest edge week may be cut

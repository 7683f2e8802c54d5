"""The repositories' contracts (bot/store/protocol.py), on both back ends (tests/store/conftest.py): topics and
their matches, follows, the outbox, sources, backfill and search, through the Store protocol only."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.models import HIGHLIGHT_END, HIGHLIGHT_START, SkippedEntry, Wanted
from bot.store import Store
from bot.store.protocol import TopicNameTaken
from tests.factories import BASE_TIME, make_paper

GUILD, CHANNEL = 7, 700


async def test_topics_matches_and_the_tree(store: Store, clock: FakeClock) -> None:
    now = clock.now()
    await store.papers.upsert([make_paper(i) for i in range(1, 5)], seen_at=now)
    parent = await store.topics.create(
        guild_id=GUILD, name="Robots", description="", query="ti:robot", at=now
    )
    child = await store.topics.create(
        guild_id=GUILD, name="Legged robots", description="", query="ti:legged", at=now, parent_id=parent.id
    )
    with pytest.raises(TopicNameTaken):
        await store.topics.create(guild_id=GUILD, name="ROBOTS", description="", query="ti:x", at=now)
    assert [t.name for t in await store.topics.own(GUILD)] == ["Legged robots", "Robots"]
    assert await store.topics.find(GUILD, "robots") == parent

    ids = [make_paper(i).arxiv_id for i in range(1, 5)]
    # own matches (a duplicate and an unstored paper are dropped), and the parent's through the child
    added = await store.topics.add_matches(
        [(child.id, ids[0]), (child.id, ids[0]), (child.id, ids[1]), (child.id, "2611.99999")],
        now,
        through=[(parent.id, ids[0]), (parent.id, ids[1])],
    )
    assert added == 2
    assert sorted(await store.topics.matched_ids(parent.id)) == ids[:2]
    # the parent's own query matching a paper it held through the child makes it its own; rebuilding keeps it
    assert await store.topics.add_matches([(parent.id, ids[0])], now) == 1
    await store.topics.rebuild_inherited(parent.id, [], now)
    assert await store.topics.matched_ids(parent.id) == [ids[0]]

    assert await store.topics.add_suggestions([(child.id, ids[0]), (child.id, ids[2])], now) == 1
    assert await store.topics.suggested_among([child.id], ids) == {ids[2]}
    assert await store.topics.replace_suggestions(child.id, [ids[3]], now) == 1
    window = (BASE_TIME - timedelta(days=1), BASE_TIME)
    assert await store.topics.count_suggested([child.id, parent.id], *window) == {child.id: 1, parent.id: 0}
    assert await store.topics.count_matches(child.id, *window) == 2
    bounds = [BASE_TIME - timedelta(hours=h) for h in (3, 1, 0)]  # papers 1 and 2: 1 and 2 hours old
    counts = await store.topics.counts_between(
        [parent.id, child.id], bounds, including={parent.id: [child.id]}
    )
    assert counts == {parent.id: [1, 1], child.id: [1, 1]}
    latest = await store.topics.latest_papers(child.id, 10, suggested=True)
    assert [p.arxiv_id for p in latest] == [ids[0], ids[1], ids[3]]  # newest first

    changed, differs = await store.topics.change(child.id, query="ti:wheeled", at=now)
    assert differs and changed.query == "ti:wheeled" and await store.topics.matched_ids(child.id) == []
    assert await store.topics.set_parent(child.id, parent.id, now) is False  # already there
    await store.topics.delete(parent.id)  # its children move to the top
    assert await store.topics.get(parent.id) is None
    assert await store.topics.get(child.id) == replace(changed, parent_id=None)


async def test_follows_and_the_outbox(store: Store, clock: FakeClock) -> None:
    now = clock.now()
    papers = [make_paper(1), make_paper(2)]
    await store.papers.upsert(papers, seen_at=now)
    a = await store.topics.create(guild_id=GUILD, name="A", description="", query="ti:paper", at=now)
    b = await store.topics.create(guild_id=GUILD, name="B", description="", query="ti:number", at=now)
    await store.topics.add_matches([(a.id, p.arxiv_id) for p in papers] + [(b.id, papers[0].arxiv_id)], now)
    follow, new = await store.follows.upsert(
        guild_id=GUILD,
        channel_id=CHANNEL,
        topic_id=a.id,
        mode="digest",
        digest_hour=8,
        created_by=None,
        at=now,
    )
    assert new and follow.topic_name == "A"
    await store.follows.upsert(
        guild_id=GUILD, channel_id=CHANNEL, topic_id=b.id, mode="each", digest_hour=8, created_by=None, at=now
    )
    assert await store.follows.digest_channels_due(8) == [CHANNEL]

    first = papers[0].arxiv_id
    wanted = [
        Wanted(GUILD, CHANNEL, first, "digest", a.id),
        Wanted(GUILD, CHANNEL, first, "each", b.id),  # same post: upgraded to 'each', both topics named
        Wanted(GUILD, CHANNEL, papers[1].arxiv_id, "digest", a.id),
    ]
    await store.deliveries.enqueue(wanted, now)
    await store.deliveries.enqueue(wanted, now)  # idempotent
    assert await store.deliveries.channels_due("each", now) == [CHANNEL]
    [each] = await store.deliveries.for_channel(CHANNEL, mode="each", now=now)
    assert each.paper.arxiv_id == first and each.topics == ("A", "B")

    await store.deliveries.mark_sending([each.id])
    assert [d.id for d in await store.deliveries.in_flight()] == [each.id]
    await store.deliveries.mark_sent([each.id], 123, now)
    await store.deliveries.enqueue(wanted[:1], now)  # sent once: never queued there again
    assert await store.deliveries.counts(GUILD) == {"sent": 1, "pending": 1}

    [digest] = await store.deliveries.for_channel(CHANNEL, mode="digest", now=now)
    await store.deliveries.mark_retry([digest.id], now + timedelta(minutes=5), "429")
    await store.deliveries.postpone_channel(CHANNEL, now + timedelta(minutes=10))
    assert await store.deliveries.for_channel(CHANNEL, mode="digest", now=now + timedelta(minutes=9)) == []
    assert await store.deliveries.channels_due("digest", now + timedelta(minutes=10)) == [CHANNEL]

    # unfollowing A drops its pending post (no other follow in the channel wants that paper)
    assert await store.follows.remove(GUILD, a.id) == 1
    assert await store.deliveries.counts(GUILD) == {"sent": 1}
    await store.follows.mark_broken(CHANNEL, "Missing Access", now)
    [left] = await store.follows.for_guild(GUILD)
    assert left.topic_name == "B" and left.broken and await store.follows.for_topics([b.id]) == []
    assert await store.deliveries.fail_channel(CHANNEL, "gone") == 0


async def test_sources_and_backfill(store: Store, clock: FakeClock) -> None:
    now = clock.now()
    await store.sources.record_failure("api", now, "x" * 900, papers=3)
    await store.sources.record_success("api", now, watermark=now + timedelta(days=1), papers=2, etag="e1")
    state = await store.sources.get("api")
    assert (state.watermark, state.etag, state.papers_stored, state.last_error) == (now, "e1", 5, None)
    await store.sources.record_success("api", now, watermark=now - timedelta(days=3))
    assert (await store.sources.get("api")).watermark == now  # never backwards
    skipped = [SkippedEntry("e1", "bad date"), SkippedEntry("e2", "no id")]
    assert await store.sources.record_skipped("api", skipped, now) == skipped
    assert await store.sources.record_skipped("api", skipped, now) == []
    assert (await store.sources.skipped_summary("api")).entries == 2  # type: ignore[union-attr]
    await store.sources.record_skipped("backfill-1", skipped[:1], now)
    assert [s.source for s in await store.sources.skipped_elsewhere()] == ["backfill-1"]

    day = timedelta(days=1)
    windows = [(now - 2 * day, now - day), (now - day, now)]
    await store.backfill.plan("job", windows)
    await store.backfill.mark_done("job", windows[1], 9)
    await store.backfill.plan("job", windows)  # a planned window keeps its progress
    await store.backfill.split(
        "job", windows[0], [(now - 2 * day, now - 1.5 * day), (now - 1.5 * day, now - day)]
    )
    found = await store.backfill.windows("job")
    assert [(w.done, w.papers) for w in found] == [(True, 9), (False, 0), (False, 0)]


async def test_search_ranks_title_hits_first_and_highlights(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert(
        [
            make_paper(1, title="A survey", abstract="Speculative decoding and more speculative decoding."),
            make_paper(2, title="Speculative decoding at scale", abstract="We make inference faster."),
            make_paper(3, title="Unrelated", abstract="Nothing to see."),
        ],
        seen_at=clock.now(),
    )
    hits = await store.search.ranked('{title abstract authors} : "speculative"')
    assert [h.paper.arxiv_id for h in hits] == [make_paper(2).arxiv_id, make_paper(1).arxiv_id]
    assert f"{HIGHLIGHT_START}Speculative{HIGHLIGHT_END} decoding and more" in hits[1].snippet
    assert len(await store.search.ranked(None, limit=2)) == 2
    with pytest.raises(ValueError):
        await store.search.ranked(None, limit=-1)

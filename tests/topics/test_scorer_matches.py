"""Suggested matches in the store (migration 0010): kept apart from the exact ones by every reader that counts,
upgraded to exact when a query matches them, renewed as a whole after a retraining, never inherited."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import FakeClock
from bot.store import Store
from tests.factories import make_paper


async def test_suggestions_stay_apart_from_exact_matches(store: Store, clock: FakeClock) -> None:
    papers = [make_paper(n) for n in (1, 2, 3)]
    await store.papers.upsert(papers, seen_at=clock.now())
    parent, _ = await store.topics.save(
        guild_id=0, slug="p", name="P", description="", query="a", at=clock.now()
    )
    child, _ = await store.topics.save(
        guild_id=0, slug="c", name="C", description="", query="b", at=clock.now()
    )
    await store.topics.set_parent(child.id, parent.id, clock.now())
    one, two, three = (p.arxiv_id for p in papers)
    await store.topics.add_matches([(child.id, one)], clock.now(), through=[(parent.id, one)])
    assert await store.topics.add_suggestions([(child.id, two), (child.id, one)], clock.now()) == 1

    # readers that count or train see exact matches only; /latest's reader sees both and which is which
    window = (papers[2].published - timedelta(days=1), papers[0].published + timedelta(days=1))
    assert await store.topics.count_matches(child.id, *window) == 1
    assert await store.topics.counts_between([child.id], list(window)) == {child.id: [1]}
    assert await store.topics.matched_ids(child.id) == [one]
    assert [p.arxiv_id for p in await store.topics.latest_papers(child.id, 10)] == [one]
    both = await store.topics.latest_papers(child.id, 10, suggested=True)
    assert [p.arxiv_id for p in both] == [one, two]
    assert await store.topics.suggested_among([child.id], [one, two, three]) == {two}

    # a child's suggestion is not its parent's: the parent's own scorer suggests for it
    await store.topics.rebuild_inherited(parent.id, [child.id], clock.now())
    assert await store.topics.matched_ids(parent.id) == [one]
    assert await store.topics.suggested_among([parent.id], [two]) == set()

    # the query matching it later makes it exact, for the topic and, through it, its parent
    await store.topics.add_matches([(child.id, two)], clock.now(), through=[(parent.id, two)])
    assert sorted(await store.topics.matched_ids(child.id)) == [one, two]
    assert await store.topics.suggested_among([child.id], [two]) == set()
    assert sorted(await store.topics.matched_ids(parent.id)) == [one, two]


async def test_a_retraining_renews_a_topics_suggestions_as_a_whole(store: Store, clock: FakeClock) -> None:
    papers = [make_paper(n) for n in (1, 2, 3)]
    await store.papers.upsert(papers, seen_at=clock.now())
    topic, _ = await store.topics.save(
        guild_id=0, slug="t", name="T", description="", query="a", at=clock.now()
    )
    one, two, three = (p.arxiv_id for p in papers)
    await store.topics.add_matches([(topic.id, one)], clock.now())
    await store.topics.add_suggestions([(topic.id, two)], clock.now())
    assert await store.topics.replace_suggestions(topic.id, [three, one], clock.now()) == 1
    assert await store.topics.suggested_among([topic.id], [one, two, three]) == {three}
    assert await store.topics.matched_ids(topic.id) == [one]  # the exact match stays exact

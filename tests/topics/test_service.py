from __future__ import annotations

from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.store import Store
from bot.topics.catalog import find_topic, load_catalog
from bot.topics.query import QuerySyntaxError
from bot.topics.service import TopicError, TopicService, slugify
from tests.factories import make_paper

GRPO = make_paper(
    1,
    title="Group Relative Policy Optimization for math reasoning in large language models",
    abstract="We post-train an LLM with GRPO on verifiable rewards and improve reasoning accuracy.",
)
ROBOT = make_paper(
    2,
    title="Sim-to-real transfer for legged robots",
    abstract="We train a quadruped locomotion policy with PPO in simulation and deploy it on hardware.",
    categories=("cs.RO",),
    primary_category="cs.RO",
)


async def test_catalog_topics_match_the_stored_history_at_start(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    service = TopicService(store, clock)
    catalog = load_catalog()
    await service.start(catalog)
    grpo = await store.topics.find(0, "Group Relative Policy Optimization")
    assert grpo is not None
    assert [p.arxiv_id for p in await store.topics.latest_papers(grpo.id, 10)] == [GRPO.arxiv_id]
    assert len(await store.topics.all()) == len(catalog)
    # starting again changes nothing and matches nothing twice
    await TopicService(store, clock).start(catalog)
    assert (
        await store.topics.count_matches(grpo.id, GRPO.published, GRPO.published + timedelta(seconds=1)) == 1
    )


async def test_new_papers_are_matched_inside_the_ingest_transaction(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, clock)
    catalog = load_catalog()
    await service.start([t for t in catalog if t.name in ("RL Post-Training", "Robot Learning")])
    async with store.transaction():
        result = await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
        matches = await service.on_stored(result, [GRPO, ROBOT])
    rl = await store.topics.find(0, "rl-post-training")
    assert rl is not None and rl.id in matches[GRPO.arxiv_id]
    assert rl.id not in matches.get(ROBOT.arxiv_id, set())
    assert find_topic(catalog, "RL Post-Training") is not None


async def test_custom_topic_matches_history_and_rematches_when_its_query_changes(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    service = TopicService(store, clock)
    row, matched = await service.save_custom(42, "Legged robots", 'abs:quadruped OR ti:"legged robots"')
    assert matched == 1 and row.guild_id == 42 and row.slug == "legged-robots"
    row2, matched2 = await service.save_custom(42, "Legged robots", "abs:GRPO")
    assert row2.id == row.id and matched2 == 1
    assert [p.arxiv_id for p in await store.topics.latest_papers(row.id, 10)] == [GRPO.arxiv_id]
    assert (await store.topics.find(7, "Legged robots")) is None  # another server does not see it


async def test_custom_topic_errors(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, clock)
    await service.start([t for t in load_catalog() if t.name == "Tool Use"])
    with pytest.raises(QuerySyntaxError) as bad:
        await service.save_custom(1, "Mine", "ti:agents AND")
    assert bad.value.position == len("ti:agents AND")
    with pytest.raises(TopicError, match="catalog topic"):
        await service.save_custom(1, "tool use", "ti:tools")
    with pytest.raises(TopicError, match="1 to 80"):
        await service.save_custom(1, "x" * 81, "ti:tools")


def test_slugify() -> None:
    assert slugify("  RL Post-Training!! ") == "rl-post-training"
    assert slugify("Métodos ópticos") == "metodos-opticos"
    assert slugify("🙂") == "topic"


async def test_history_scan_finds_category_bound_topics_whatever_the_case(
    store: Store, clock: FakeClock
) -> None:
    robots = [
        make_paper(10 + i, title=f"Grasping study {i}", categories=("cs.RO",), primary_category="cs.RO")
        for i in range(3)
    ]
    await store.papers.upsert([*robots, GRPO], seen_at=clock.now())
    service = TopicService(store, clock)
    # the case differs from the stored "cs.RO": queries are case-insensitive, the category filter must be too
    _, matched = await service.save_custom(1, "Robots", "cat:CS.ro")
    assert matched == 3
    _, either = await service.save_custom(1, "Robots or GRPO", "cat:cs.RO OR abs:GRPO")
    assert either == 4  # an OR with a free branch is not bound to cs.RO
    _, none = await service.save_custom(1, "Nowhere", "cat:q-bio.NC AND ti:grasping")
    assert none == 0
    assert await store.papers.category_names() == ["cs.AI", "cs.LG", "cs.RO"]

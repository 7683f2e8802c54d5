"""The stored history: searches that go past the first candidates and say when they stop, every match of a
query, a topic's latest papers, and one paper fetched from arXiv when it is not stored."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.errors import PaperwatchError
from bot.models import Paper
from bot.services.topics import TopicError, TopicLimits
from bot.topics.catalog import load_catalog
from bot.topics.query import parse_query
from tests.factories import BASE_TIME, make_paper
from tests.services.world import World


async def test_search_finds_matches_ranked_below_the_first_candidates(world: World) -> None:
    store, clock = world.store, world.clock
    crowded = [
        make_paper(7000 + i, title=f"Transformer attention study {i}", abstract="Transformer attention.")
        for i in range(1200)
    ]
    plain = [
        make_paper(9000 + i, title=f"Sequence models {i}", abstract="A long abstract. " * 20 + "transformer")
        for i in range(3)
    ]
    old_ids = [
        make_paper(1, arxiv_id=f"2001.0000{i}", published=BASE_TIME - timedelta(days=900)) for i in range(2)
    ]
    await store.papers.upsert([*crowded, *plain, *old_ids], seen_at=clock.now())
    service = world.services.history

    result = await service.search(parse_query("transformer ANDNOT attention"))
    assert sorted(h.paper.arxiv_id for h in result.hits) == sorted(p.arxiv_id for p in plain)
    assert result.complete and result.checked == 1203

    by_id = await service.search(parse_query("id:2001*"))
    assert sorted(h.paper.arxiv_id for h in by_id.hits) == sorted(p.arxiv_id for p in old_ids)

    bounded = world.rebuilt(TopicLimits(search_candidates=700)).history
    partial = await bounded.search(parse_query("transformer ANDNOT attention"))
    assert (partial.hits, partial.checked, partial.complete) == ([], 700, False)
    enough = await service.search(parse_query("transformer"), want=10)
    assert len(enough.hits) == 10 and enough.complete


async def test_latest_refuses_a_count_outside_1_to_50(world: World) -> None:
    store, service = world.store, world.services.history
    row, _ = await world.services.topics.save_custom(1, "Robots", "ti:legged")
    for count in (-1, 0, 51):
        with pytest.raises(TopicError, match="1 to 50"):
            await service.latest(row, count)
    with pytest.raises(ValueError):
        await store.topics.latest_papers(row.id, -1)


async def test_every_match_of_a_query_newest_first_and_since_a_day(world: World) -> None:
    papers = [
        make_paper(i, title=f"Kalman filters {i}", published=BASE_TIME - timedelta(days=i)) for i in range(5)
    ]
    await world.intake.store_papers([*papers, make_paper(9, title="Other things")], announce=False)
    history = world.services.history
    assert await history.matches(parse_query("ti:kalman")) == papers
    since = BASE_TIME - timedelta(days=2, hours=1)
    assert await history.matches(parse_query("ti:kalman"), since=since) == papers[:3]
    assert await history.matches(parse_query("cat:q-bio.NC AND ti:kalman")) == []


async def test_a_paper_not_stored_is_fetched_stored_and_matched_but_never_posted(world: World) -> None:
    topic, _ = await world.services.topics.save_custom(3, "Axolotls", "ti:axolotl")
    follows = world.services.follows
    await follows.follow(await follows.plan(3, 30, "Axolotls"))
    paper = make_paper(40, title="Axolotl limb regeneration")
    world.arxiv.papers = [paper]
    history = world.services.history
    assert await history.stored(paper.arxiv_id) is None
    assert await history.fetch(paper.arxiv_id) == paper
    assert await history.stored(paper.arxiv_id) == paper
    assert await history.latest(topic, 5) == [paper]
    assert await history.topic_names(3, paper) == ["Axolotls"]
    assert await history.topic_names(4, paper) == []  # another server's topic is never named
    assert (await world.services.status.of_server(3)).deliveries == {}


async def test_fetching_a_paper_arxiv_lacks_or_cannot_serve_says_what_to_do(world: World) -> None:
    history = world.services.history
    with pytest.raises(PaperwatchError, match=r"arXiv has no paper 2611\.19999\. Check the id"):
        await history.fetch("2611.19999")
    world.arxiv.fail_next(503, count=2)
    with pytest.raises(PaperwatchError, match=r"did not answer for 2611\.10001 just now"):
        await history.fetch("2611.10001")
    assert await history.stored("2611.10001") is None


async def test_a_catalog_topic_seen_from_a_server_includes_that_servers_own_topics_under_it(
    world: World,
) -> None:
    await world.index.start([t for t in load_catalog() if t.name == "RL Post-Training"])
    now = world.clock.now()
    grpo = make_paper(71, title="GRPO for LLM math", abstract="GRPO.", published=now - timedelta(days=3))
    okapi = make_paper(72, title="Okapi gaits", abstract="Walking.", published=now - timedelta(days=4))
    both = make_paper(
        73, title="GRPO for okapi LLM agents", abstract="GRPO.", published=now - timedelta(days=5)
    )
    await world.intake.store_papers([grpo, okapi, both], announce=False)
    use = world.services
    await use.topics.save_custom(5, "Okapis", "ti:okapi", parent="RL Post-Training")
    rl = await use.topics.resolve(5, "RL Post-Training")

    def ids(papers: list[Paper]) -> list[str]:
        return [p.arxiv_id for p in papers]

    # in the server that placed its topic there, the catalog topic holds it too (each paper once) ...
    assert ids(await use.history.latest(rl, 10, 5)) == [grpo.arxiv_id, okapi.arxiv_id, both.arxiv_id]
    found = await use.history.search(parse_query("okapi"), topic=rl, guild_id=5)
    assert sorted(h.paper.arxiv_id for h in found.hits) == [okapi.arxiv_id, both.arxiv_id]
    assert (await use.momentum.topic(rl, guild_id=5)).current == 3
    assert await use.history.topic_names(5, both) == ["Okapis"]  # the most specific topic it matched
    # ... and everywhere else the catalog topic is what the catalog says
    for guild in (6, 0):
        assert ids(await use.history.latest(rl, 10, guild)) == [grpo.arxiv_id, both.arxiv_id]
        assert (await use.momentum.topic(rl, guild_id=guild)).current == 2
    only = await use.history.search(parse_query("okapi"), topic=rl, guild_id=6)
    assert [h.paper.arxiv_id for h in only.hits] == [both.arxiv_id]
    assert await use.history.topic_names(6, both) == ["RL Post-Training"]

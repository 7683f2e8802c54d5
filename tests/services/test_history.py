"""The stored history: searches that go past the first candidates and say when they stop, every match of a
query, a topic's latest papers, and one paper fetched from arXiv when it is not stored."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.services.topics import TopicError, TopicLimits
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

"""A topic's history candidates (TopicRepo.count_candidates / candidates), on both back ends: the PostgreSQL store
reads the candidates once for the count and again only when asked for another prefilter, so what is stored or
asked for between the count and the read must still come out right."""

from __future__ import annotations

from bot.clock import FakeClock
from bot.store import Store
from bot.topics.query import parse_query
from tests.factories import make_paper

GRAPHS = parse_query("ti:graph").to_fts5()
DIFFUSION = parse_query("ti:diffusion").to_fts5()


async def ids(store: Store, fts: str | None, batch: int = 5000) -> list[list[str]]:
    return [[p.arxiv_id for p in b] async for b in store.topics.candidates(fts, batch=batch)]


async def test_candidates_counted_then_read_in_batches_include_papers_stored_since_the_count(
    store: Store, clock: FakeClock
) -> None:
    graphs = [make_paper(n, title=f"Graph networks, part {n}") for n in range(1, 4)]
    await store.papers.upsert([*graphs, make_paper(9, title="Diffusion models")], seen_at=clock.now())
    assert await store.topics.count_candidates(GRAPHS, cap=100) == 3
    assert await store.topics.count_candidates(GRAPHS, cap=2) == 2
    later = make_paper(20, title="Graph transformers")
    await store.papers.upsert([later], seen_at=clock.now())
    found = [a for b in await ids(store, GRAPHS, batch=2) for a in b]
    assert sorted(found) == sorted(p.arxiv_id for p in [*graphs, later])  # each once, the late one too
    assert await ids(store, GRAPHS) == [[p.arxiv_id for p in graphs] + [later.arxiv_id]]  # read afresh


async def test_a_count_of_one_query_never_stands_for_another(store: Store, clock: FakeClock) -> None:
    diffusion = make_paper(9, title="Diffusion models")
    await store.papers.upsert([make_paper(1, title="Graph networks"), diffusion], seen_at=clock.now())
    assert await store.topics.count_candidates(GRAPHS, cap=100) == 1
    assert await ids(store, DIFFUSION) == [[diffusion.arxiv_id]]
    assert await store.topics.count_candidates(DIFFUSION, cap=100) == 1
    assert await store.topics.count_candidates(parse_query("ti:nothing").to_fts5(), cap=100) == 0
    assert await ids(store, parse_query("ti:nothing").to_fts5()) == []

"""A word searched within the title or the authors (`ti:testing`) is ranked, in a big store, from the candidates'
own hits and sizes rather than by FTS5's bm25() (which decodes every entry of the word to count the papers
holding it): the order must stay bm25's, its column weight and its length normalisation included."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.clock import FakeClock
from bot.models import Author, Paper
from bot.sources.arxiv_api import parse_feed
from bot.store import SqliteStore, Store
from bot.store.search import _ONE_WORD_IN_COLUMN, SearchRepo
from bot.topics.query import parse_query
from tests.factories import make_paper
from tests.shared_files import FIXTURES

pytestmark = pytest.mark.sqlite_only  # the ranking reads FTS5's own records


def _recorded_papers() -> list[Paper]:
    """Real titles, abstracts and author names: the recorded arXiv API pages."""
    papers: list[Paper] = []
    for name in ("api_query_testing_100.xml", "api_query_legacy_10.xml"):
        papers += parse_feed((FIXTURES / name).read_bytes()).papers
    return papers


async def _both_orders(
    store: Store, text: str, *, pool: int = 200, categories: Sequence[str] = ()
) -> tuple[list[int], list[int]]:
    """(bm25's order, the own ranking's order) of the query's pool; the own ranking taken from one paper on."""
    assert isinstance(store, SqliteStore)
    fts = parse_query(text).to_fts5()
    assert fts is not None and _ONE_WORD_IN_COLUMN.fullmatch(fts), fts  # the case ranked without bm25
    own = SearchRepo(store.db, own_rank_from=1)
    bm25 = await store.search.ranked_ids(fts, pool=pool, categories=categories)
    return bm25, await own.ranked_ids(fts, pool=pool, categories=categories)


async def test_a_word_in_a_column_keeps_bm25s_order_on_real_papers(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert(_recorded_papers(), seen_at=clock.now())
    for text in ("ti:testing", "ti:test*", "ti:generation", "au:martin", "au:zhang", "ti:metamorphic"):
        bm25, own = await _both_orders(store, text)
        assert len(bm25) > 3 and own == bm25, text
    for pool in (5, 20):  # the newest candidates only
        bm25, own = await _both_orders(store, "ti:testing", pool=pool)
        assert len(bm25) == pool and own == bm25
    bm25, own = await _both_orders(store, "ti:testing", categories=["cs.SE"])  # with a filter
    assert len(bm25) > 3 and own == bm25


async def test_more_hits_then_a_shorter_paper_rank_first(store: Store, clock: FakeClock) -> None:
    long = " ".join(f"filler{i}" for i in range(80))
    papers = [
        make_paper(1, title="Ferret study here", abstract=f"Ferrets everywhere. {long}"),
        make_paper(2, title="Ferret study here", abstract="Short."),  # the same hits, fewer tokens in all
        make_paper(3, title="Ferret ferret study", abstract="Short."),  # as long, one more hit
        make_paper(4, title="Other study", abstract="A ferret in the abstract only."),
        make_paper(5, title="Ferrets", abstract="x", authors=(Author("Ferret Jones"),)),
    ]
    await store.papers.upsert(papers, seen_at=clock.now())
    bm25, own = await _both_orders(store, "ti:ferret")
    assert own == bm25
    ranked = [hit.paper.arxiv_id for hit in await store.search.hits(own)]  # in the order given
    assert papers[3].arxiv_id not in ranked  # no hit in the title
    position = {arxiv_id: i for i, arxiv_id in enumerate(ranked)}
    first, same, longer = (position[papers[i].arxiv_id] for i in (2, 1, 0))
    assert first < same < longer
    bm25, own = await _both_orders(store, "au:ferret")
    assert own == bm25 and len(own) == 1

"""A hit's snippet is cut from the hit's own text (bot/store/snippets.py), not by seeking each hit in the store's
index: it must still be exactly what FTS5's snippet() cuts from that index, words matched in every way the
query language writes them (stems, prefixes, phrases, a match in the authors only, folded accents)."""

from __future__ import annotations

import pytest

from bot.clock import FakeClock
from bot.models import HIGHLIGHT_END, HIGHLIGHT_START, Author
from bot.store import SqliteStore, Store
from bot.topics.query import parse_query
from tests.factories import make_paper

LONG = " ".join(f"filler{i}" for i in range(60))
PAPERS = [
    make_paper(
        1, title="Diffusion models", abstract=f"{LONG} We study diffusing particles. {LONG} diffusion."
    ),
    make_paper(2, title="Reward models", abstract="A reward model scores answers; reward modelling helps."),
    make_paper(3, title="Other", abstract="Nothing here.", authors=(Author("Grace Hopper"),)),
    make_paper(4, title="Café", abstract=f"Résumé of the café's {LONG} naïve cafe policies."),
]
QUERIES = ["diffusion", "diffus*", '"reward model"', "au:hopper", "cafe AND naive", "polic*"]


async def cut(store: Store, text: str) -> list[tuple[str, str]]:
    fts = parse_query(text).to_fts5()
    assert fts is not None
    pks = await store.search.ranked_ids(fts, pool=10)
    hits = await store.search.with_snippets(fts, await store.search.hits(pks))
    return [(h.paper.arxiv_id, h.snippet) for h in hits]


@pytest.mark.sqlite_only
async def test_snippets_are_those_fts5_cuts_from_the_store_index(store: Store, clock: FakeClock) -> None:
    assert isinstance(store, SqliteStore)
    await store.papers.upsert(PAPERS, seen_at=clock.now())
    for text in QUERIES:
        fts = parse_query(text).to_fts5()
        rows = await store.db.fetchall(
            "SELECT p.arxiv_id, snippet(papers_fts, 1, ?, ?, '…', 24) FROM papers_fts"
            " JOIN papers p ON p.pk = papers_fts.rowid WHERE papers_fts MATCH ?",
            (HIGHLIGHT_START, HIGHLIGHT_END, fts),
        )
        from_index = {r[0]: r[1] for r in rows}
        found = await cut(store, text)
        assert found and dict(found) == from_index, text


async def test_snippets_mark_the_matched_words_on_both_back_ends(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert(PAPERS, seen_at=clock.now())
    snips = dict(await cut(store, "diffus*"))
    assert f"{HIGHLIGHT_START}diffusing{HIGHLIGHT_END}" in snips[PAPERS[0].arxiv_id]
    assert dict(await cut(store, "au:hopper")) == {PAPERS[2].arxiv_id: "Nothing here."}  # nothing to mark
    [(_, cafe)] = await cut(store, "cafe AND naive")
    assert f"{HIGHLIGHT_START}naïve{HIGHLIGHT_END} {HIGHLIGHT_START}cafe{HIGHLIGHT_END}" in cafe

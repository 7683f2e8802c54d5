"""A query of one phrase is ranked, in a big store, within the full-text index of the newest papers only
(migration 0019's window, bot/store/recent_fts.py), where bm25() counts the papers holding the phrase among a
few thousand rather than a million. The order must stay the one bm25 gives over the whole index, although the
window's average length differs from the whole index's; the window must hold exactly the newest papers once
brought up to date, as papers come, change and go; a window behind the newest papers, or a pool reaching below
it, is not used."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import pytest

from bot.clock import FakeClock
from bot.models import Author, Paper
from bot.sources.arxiv_api import parse_feed
from bot.store import SqliteStore, Store
from bot.store.search import SearchRepo
from bot.topics.query import parse_query
from tests.factories import make_paper
from tests.shared_files import FIXTURES

pytestmark = pytest.mark.sqlite_only  # the window is SQLite's: FTS5's own tables

WHOLE_INDEX = 10**12  # a store never holds this many papers: bm25 over the whole index, as before the window


def _recorded_papers() -> list[Paper]:
    """Real titles, abstracts and author names: the recorded arXiv API pages."""
    papers: list[Paper] = []
    for name in ("api_query_testing_100.xml", "api_query_legacy_10.xml"):
        papers += parse_feed((FIXTURES / name).read_bytes()).papers
    return papers


async def _trace_statements(store: SqliteStore, statements: list[str]) -> None:
    """Record every statement the store's connections run (SQLite's own trace), to tell which index ranked."""
    for connection in store.db.connections():
        await connection.set_trace_callback(statements.append)


async def _both_orders(
    store: Store, text: str, *, pool: int, categories: Sequence[str] = (), refresh: bool = True
) -> tuple[list[int], list[int], bool]:
    """(bm25's order over the whole index, the order ranked in the window, whether the window ranked it); the
    window first brought up to date, unless not `refresh`."""
    assert isinstance(store, SqliteStore)
    fts = parse_query(text).to_fts5()
    assert fts is not None
    whole = await SearchRepo(store.db, recent_from=WHOLE_INDEX).ranked_ids(
        fts, pool=pool, categories=categories
    )
    repo = SearchRepo(store.db, recent_from=0)
    if refresh:
        await repo.recent.refresh()
    statements: list[str] = []
    await _trace_statements(store, statements)
    try:
        windowed = await repo.ranked_ids(fts, pool=pool, categories=categories)
        await repo.recent.refreshed()  # a refresh the search started
    finally:
        for connection in store.db.connections():
            await connection.set_trace_callback(None)
    ranked_in_window = any("bm25(papers_recent_fts" in s for s in statements)
    ranked_in_index = any("bm25(papers_fts" in s or "highlight(papers_fts" in s for s in statements)
    assert not (ranked_in_window and ranked_in_index), statements
    return whole, windowed, ranked_in_window


async def _set_span(store: SqliteStore, span: int) -> None:
    """A window of `span` row ids from the newest paper back (10,000 in a store), up to date."""
    await store.db.execute(
        "UPDATE papers_recent_window SET span = ?, low = (SELECT COALESCE(MAX(pk), 0) FROM papers) - ? + 1,"
        " high = (SELECT COALESCE(MAX(pk), 0) FROM papers)",
        (span, span),
    )
    await store.db.execute("INSERT INTO papers_recent_fts (papers_recent_fts) VALUES ('rebuild')")


async def _window(store: SqliteStore) -> tuple[set[int], set[int]]:
    """(the row ids the window's index holds, through a word every test paper holds; the stored papers' among
    the newest `span` row ids)."""
    span = await store.db.fetchone("SELECT span FROM papers_recent_window")
    assert span is not None
    indexed = await store.db.fetchall(
        "SELECT rowid FROM papers_recent_fts WHERE papers_recent_fts MATCH 'everywhere'"
    )
    newest = await store.db.fetchall(
        "SELECT pk FROM papers WHERE pk > (SELECT MAX(pk) FROM papers) - ?", (span[0],)
    )
    return {r[0] for r in indexed}, {r[0] for r in newest}


async def test_the_window_indexes_as_the_store_does(store: Store) -> None:
    # Its tokenizer and columns must be papers_fts's, or its hits and lengths would not be bm25's over the whole.
    assert isinstance(store, SqliteStore)
    schemas = {
        r[0]: r[1]
        for r in await store.db.fetchall(
            "SELECT name, sql FROM sqlite_master WHERE name IN ('papers_fts', 'papers_recent_fts')"
        )
    }
    tokenizers = {name: re.findall(r"tokenize\s*=\s*'([^']*)'", sql) for name, sql in schemas.items()}
    assert tokenizers["papers_recent_fts"] == tokenizers["papers_fts"] != []
    columns = [
        [r[1] for r in await store.db.fetchall(f"PRAGMA table_info({name})")]
        for name in ("papers_fts", "papers_recent_fts")
    ]
    assert columns[0] == columns[1] == ["title", "abstract", "authors"]


async def test_one_phrase_ranked_in_the_window_keeps_bm25s_order(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert(_recorded_papers(), seen_at=clock.now())
    for text in ("testing", "test*", "ti:testing", "abs:generation", "au:zhang", '"test generation"'):
        for pool in (4, 18):  # au:zhang: 4 papers, so 18 reaches below its first
            whole, windowed, in_window = await _both_orders(store, text, pool=pool)
            assert windowed == whole, text
            assert in_window == (len(whole) == pool) and len(whole) >= 4, (text, pool)
    whole, windowed, in_window = await _both_orders(store, "testing", pool=30, categories=["cs.SE"])
    assert in_window and len(whole) == 30 and windowed == whole  # with a filter
    # More than one phrase: one idf each, which the window's counts would change: ranked over the whole index.
    whole, windowed, in_window = await _both_orders(store, "testing OR generation", pool=5)
    assert not in_window and windowed == whole


async def test_the_whole_index_average_length_decides_not_the_windows(store: Store, clock: FakeClock) -> None:
    # Old papers long, the newest short: the window's average length is a fraction of the whole index's, which
    # changes bm25's order over the window; the window's ranking must give the whole index's order all the same.
    rng = random.Random(7)
    filler = [f"filler{i}" for i in range(300)]

    def paper(n: int, words: int) -> Paper:
        hits = rng.randint(1, 4)
        text = rng.sample(filler, words) + ["ferret"] * hits
        rng.shuffle(text)
        title = "Ferret study" if rng.random() < 0.3 else "A study"
        return make_paper(n, title=title, abstract=" ".join(text), authors=(Author("Ada Lovelace"),))

    await store.papers.upsert([paper(n, 200) for n in range(1, 61)], seen_at=clock.now())
    await store.papers.upsert([paper(n, rng.randint(2, 30)) for n in range(61, 121)], seen_at=clock.now())
    assert isinstance(store, SqliteStore)
    await _set_span(store, 60)
    whole, windowed, in_window = await _both_orders(store, "ferret", pool=60)
    assert in_window and len(whole) == 60 and windowed == whole
    window_only = await store.db.fetchall(
        "SELECT pk FROM (SELECT rowid AS pk, bm25(papers_recent_fts, 4.0, 1.0, 2.0) AS score"
        " FROM papers_recent_fts WHERE papers_recent_fts MATCH 'ferret' ORDER BY rowid DESC LIMIT 60)"
        " ORDER BY score, pk"
    )
    assert [r[0] for r in window_only] != whole  # what bm25 over the window alone would have shown


async def test_a_pool_reaching_below_the_window_is_ranked_over_the_whole_index(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert(_recorded_papers(), seen_at=clock.now())
    assert isinstance(store, SqliteStore)
    await _set_span(store, 20)
    whole, windowed, in_window = await _both_orders(store, "testing", pool=100)
    assert not in_window and len(whole) > 20 and windowed == whole


async def test_a_window_behind_the_newest_papers_is_brought_up_to_date(
    store: Store, clock: FakeClock
) -> None:
    assert isinstance(store, SqliteStore)
    await _set_span(store, 20)
    papers = _recorded_papers()
    await store.papers.upsert(papers[:30], seen_at=clock.now())
    await store.papers.upsert(papers[30:35], seen_at=clock.now())  # newer than the window's last refresh
    # Not ranked in a window missing the newest papers: over the whole index, and the window refreshed meanwhile.
    whole, windowed, in_window = await _both_orders(store, "testing", pool=10, refresh=False)
    assert not in_window and windowed == whole
    whole, windowed, in_window = await _both_orders(store, "testing", pool=10, refresh=False)
    assert in_window and windowed == whole


async def test_a_small_store_ranks_over_the_whole_index(store: Store, clock: FakeClock) -> None:
    # Below 100,000 papers bm25's count over the whole index costs less than the window's ranking adds: the
    # window is neither used nor kept up to date.
    assert isinstance(store, SqliteStore)
    await store.papers.upsert(_recorded_papers(), seen_at=clock.now())
    statements: list[str] = []
    await _trace_statements(store, statements)
    try:
        ranked = await store.search.ranked_ids('"testing"', pool=10)
        await store.search.recent.refreshed()
    finally:
        for connection in store.db.connections():
            await connection.set_trace_callback(None)
    assert len(ranked) == 10
    assert not any("bm25(papers_recent_fts" in s for s in statements)
    window = await store.db.fetchone("SELECT high FROM papers_recent_window")
    assert window is not None and window[0] == 0  # as the migration left it in the empty store


def _quokka(n: int, word: str = "quokka") -> Paper:
    return make_paper(n, title=f"On the {word}", abstract=f"A {word} everywhere, paper {n}.")


async def test_the_window_holds_exactly_the_newest_papers(store: Store, clock: FakeClock) -> None:
    assert isinstance(store, SqliteStore)
    await _set_span(store, 20)
    repo = SearchRepo(store.db, recent_from=0)
    repo.recent.chunk = 3  # several transactions per refresh
    for start in range(1, 60, 7):  # batches of 7, as polls bring them
        await store.papers.upsert([_quokka(n) for n in range(start, start + 7)], seen_at=clock.now())
        await repo.recent.refresh()
        indexed, newest = await _window(store)
        assert indexed == newest and len(newest) == min(20, start + 6)
    await store.papers.upsert(
        [_quokka(n) for n in range(100, 150)], seen_at=clock.now()
    )  # more than its span
    await repo.recent.refresh()
    indexed, newest = await _window(store)
    assert indexed == newest and len(newest) == 20
    # A new version changes a paper's text: within the window it is indexed again, below it nothing changes,
    # and a paper newer than the window gets its new text when the window reaches it.
    await store.papers.upsert([_quokka(n) for n in range(150, 153)], seen_at=clock.now())
    rows = await store.db.fetchall("SELECT pk, arxiv_id FROM papers ORDER BY pk DESC LIMIT 24")
    newer, inside, below = rows[0], rows[5], rows[23]
    changed = [
        make_paper(
            1, arxiv_id=row["arxiv_id"], version=2, title="On the wombat", abstract="A wombat everywhere."
        )
        for row in (newer, inside, below)
    ]
    await store.papers.upsert(changed, seen_at=clock.now())
    await store.db.execute("DELETE FROM papers WHERE pk = ?", (rows[6]["pk"],))
    await repo.recent.refresh()
    indexed, newest = await _window(store)
    assert indexed == newest and len(newest) == 19  # one of its row ids deleted
    found = await store.db.fetchall(
        "SELECT rowid FROM papers_recent_fts WHERE papers_recent_fts MATCH 'wombat'"
    )
    assert {r[0] for r in found} == {newer["pk"], inside["pk"]}
    gone = await store.db.fetchall(
        "SELECT rowid FROM papers_recent_fts WHERE papers_recent_fts MATCH 'quokka'"
    )
    assert not {newer["pk"], inside["pk"]} & {r[0] for r in gone}
    # What it indexes is its content, row for row: bm25 over it counts what a fresh index of it would.
    await store.db.execute("INSERT INTO papers_recent_fts (papers_recent_fts) VALUES ('integrity-check')")
    scores = "SELECT rowid, bm25(papers_recent_fts) FROM papers_recent_fts WHERE papers_recent_fts MATCH 'everywhere'"
    before = [tuple(r) for r in await store.db.fetchall(scores)]
    await store.db.execute("INSERT INTO papers_recent_fts (papers_recent_fts) VALUES ('rebuild')")
    assert [tuple(r) for r in await store.db.fetchall(scores)] == before
    await repo.close()

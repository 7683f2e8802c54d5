"""Ingest on PostgreSQL: papers go in by COPY with a tsvector the store builds itself (bot/store/postgres/tokens.py,
tsvectors.py), which must equal the one PostgreSQL's own parser makes of the words SQLite's FTS5 indexes (the
generated column of migration 0001 it replaced): the topics' prefilter reasons about exactly those words."""

from __future__ import annotations

import asyncio
import contextvars
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import closing
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.clock import FakeClock
from bot.fts_tokenizer import PAPERS_TOKENIZER
from bot.models import Paper
from bot.sources.arxiv_api import parse_feed
from bot.store.postgres import PostgresStore
from bot.store.postgres.tokens import encode
from bot.topics.catalog import load_catalog
from bot.topics.relevance import DEFAULT_LABELS, load_labels
from tests.factories import make_paper
from tests.shared_files import FIXTURES
from tests.topics.strategies import papers

# What migration 0001 generated `words` from (the words FTS5 indexes, per column), and what the search's tsqueries
# still assume it holds.
PARSED = (
    "setweight(to_tsvector('simple'::regconfig, w.title), 'A')"
    " || setweight(to_tsvector('simple'::regconfig, w.abstract), 'B')"
    " || setweight(to_tsvector('simple'::regconfig, w.authors), 'C')"
)
EDGES = [
    make_paper(
        1, title="Ünïcode façade ß ﬁ naïve 漢字 résumé 91e607f x2a", abstract="Schrödinger’s café, Ångström."
    ),
    make_paper(2, title="", abstract="learning " * 300, authors=()),  # > 256 positions of one word
    make_paper(
        3, title="many words", abstract=" ".join(f"w{i}" for i in range(17_000))
    ),  # past position 16,383
    make_paper(4, title="a" * 2_100 + " short", abstract="é" * 1_100 + " tail"),  # words too long to index
]


def fts5_words(papers: Sequence[Paper]) -> list[tuple[str, str, str]]:
    """Each paper's words per column as SQLite's FTS5 indexes them (read back from an FTS5 table), encoded as
    the PostgreSQL store writes words (tokens.py `encode`), space-joined."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(title, abstract, authors, tokenize='{PAPERS_TOKENIZER}')"
        )
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.executemany(
            "INSERT INTO t (rowid, title, abstract, authors) VALUES (?, ?, ?, ?)",
            [(i, p.title, p.abstract, ", ".join(a.name for a in p.authors)) for i, p in enumerate(papers)],
        )
        words: list[list[list[str]]] = [[[], [], []] for _ in papers]
        for doc, column, term in db.execute("SELECT doc, col, term FROM v ORDER BY doc, col, offset"):
            words[doc][("title", "abstract", "authors").index(column)].append(encode(term))
    return [(" ".join(t), " ".join(a), " ".join(au)) for t, a, au in words]


async def differing(store: PostgresStore, papers: Sequence[Paper]) -> list[str]:
    """The papers (ids) whose stored tsvector is not PostgreSQL's own of their words; each must be stored."""
    words = fts5_words(papers)
    rows = await store.db.fetchall(
        "SELECT w.arxiv_id FROM unnest(?::text[], ?::text[], ?::text[], ?::text[])"
        " AS w (arxiv_id, title, abstract, authors) LEFT JOIN papers p USING (arxiv_id)"
        f" WHERE p.words IS DISTINCT FROM ({PARSED})",
        ([p.arxiv_id for p in papers], *(list(column) for column in zip(*words, strict=True))),
    )
    return [r[0] for r in rows]


@pytest.fixture
async def postgres(postgres_url: str, clock: FakeClock) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore.open(postgres_url, clock)
    try:
        yield store
    finally:
        await store.close()


async def test_built_tsvectors_equal_postgresqls_on_edge_cases(
    postgres: PostgresStore, clock: FakeClock
) -> None:
    result = await postgres.papers.upsert(EDGES, seen_at=clock.now())
    assert len(result.new) == len(EDGES)
    assert await differing(postgres, EDGES) == []
    revised = [make_paper(1, version=2, title="Revised façade", abstract="New words")]
    assert (await postgres.papers.upsert(revised, seen_at=clock.now())).updated == [revised[0].arxiv_id]
    assert await differing(postgres, [*revised, *EDGES[1:]]) == []
    rows = await postgres.db.fetchall("SELECT arxiv_id FROM papers WHERE words @@ 'revis & facad'::tsquery")
    assert [r[0] for r in rows] == [revised[0].arxiv_id]


async def test_built_tsvectors_equal_postgresqls(postgres: PostgresStore, clock: FakeClock) -> None:
    """On generated papers (any text the topic tests use), a batch at a time."""
    loop = asyncio.get_running_loop()

    async def check(corpus: list[Paper]) -> None:
        await postgres.db.execute("TRUNCATE papers CASCADE")
        await postgres.papers.upsert(corpus, seen_at=clock.now())
        assert await differing(postgres, corpus) == []

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(papers, min_size=1, max_size=8))
    def property(corpus: list[Paper]) -> None:
        numbered = [replace(p, arxiv_id=f"2601.{i:05d}") for i, p in enumerate(corpus)]
        asyncio.run_coroutine_threadsafe(check(numbered), loop).result()

    await asyncio.to_thread(property)


async def test_a_paper_another_process_stores_meanwhile_is_kept_once(
    postgres_url: str, clock: FakeClock
) -> None:
    """Two processes (two stores on one database) store the same paper at once: the second's batch, which read
    it as new, skips it when the first commits, and stores the rest."""
    first, second = make_paper(1, title="First process's copy"), make_paper(1, title="Second process's copy")
    other = make_paper(2, categories=("cs.CL", "stat.ML", "cs.CL"))
    async with (
        await PostgresStore.open(postgres_url, clock) as one,
        await PostgresStore.open(postgres_url, clock) as two,
    ):
        async with one.transaction():
            await one.papers.upsert([first], seen_at=clock.now())
            racing = asyncio.create_task(  # a context of its own: a process outside the first's transaction
                two.papers.upsert([second, other], seen_at=clock.now()), context=contextvars.Context()
            )
            while not await one.db.fetchone(  # the second's COPY waits on the first's uncommitted row
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ):
                assert not racing.done(), racing.result()
        result = await racing
        assert result.new == [second.arxiv_id, other.arxiv_id]  # as read before the first committed
        assert [p.title for p in [await two.papers.get(first.arxiv_id)] if p] == [first.title]
        assert await two.papers.get(other.arxiv_id) is not None
        assert await two.papers.count() == 2
        linked = await two.db.fetchall(
            "SELECT p.arxiv_id, c.category FROM paper_categories c JOIN papers p ON p.pk = c.paper_pk"
            " ORDER BY 1, 2"
        )
        assert [tuple(r) for r in linked] == [
            (first.arxiv_id, "cs.AI"),
            (first.arxiv_id, "cs.LG"),
            (other.arxiv_id, "cs.CL"),
            (other.arxiv_id, "stat.ML"),
        ]
        assert await differing(two, [first, other]) == []


async def test_a_large_page_is_stored_whole(postgres: PostgresStore, clock: FakeClock) -> None:
    """A page of hundreds of papers (several chunks of the COPY's, papers.py CHUNK): every paper stored once, with
    its tsvector and categories (each once), and a second upsert of the page changes nothing."""
    page = [
        make_paper(i, title=f"Paper {i} on chunked ingest", categories=("cs.LG", "cs.AI", "cs.LG"))
        for i in range(1, 652)
    ]
    result = await postgres.papers.upsert(page, seen_at=clock.now())
    assert result.new == [p.arxiv_id for p in page]
    assert await postgres.papers.count() == len(page)
    assert await differing(postgres, page) == []
    linked = await postgres.db.fetchone("SELECT COUNT(*) FROM paper_categories")
    assert linked is not None and linked[0] == 2 * len(page)
    again = await postgres.papers.upsert(page, seen_at=clock.now())
    assert again.new == [] and again.unchanged == len(page)


async def test_recorded_and_labelled_papers_keep_their_tsvectors(
    postgres: PostgresStore, clock: FakeClock
) -> None:
    """Real text (the recorded arXiv pages and the labelled records: LaTeX, accents, names of every script),
    stored a page at a time as a poll stores it: each tsvector is PostgreSQL's own of the words FTS5 indexes."""
    recorded = [
        paper
        for name in ("api_query_testing_100.xml", "api_query_legacy_10.xml")
        for paper in parse_feed((FIXTURES / name).read_bytes()).papers
    ]
    labelled = list(load_labels(DEFAULT_LABELS, load_catalog()).papers.values())
    corpus = list({p.arxiv_id: p for p in [*recorded, *labelled]}.values())
    assert len(recorded) == 110 and len(labelled) > 1_000
    for start in range(0, len(corpus), 500):
        await postgres.papers.upsert(corpus[start : start + 500], seen_at=clock.now())
    assert await postgres.papers.count() == len(corpus)
    assert await differing(postgres, corpus) == []

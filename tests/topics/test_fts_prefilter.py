"""The FTS5 prefilter never drops a true match: every paper `matches()` accepts is an FTS candidate.

The table is the store's, column for column and with the same tokenizer; SQLite is the stdlib module, so
these tests exercise exactly the stemmer and folding the store uses.
"""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from bot.fts_tokenizer import FOLDING_TOKENIZER, PAPERS_TOKENIZER
from bot.models import Paper
from bot.store import Store
from bot.topics.query import QuerySyntaxError, fold_words, fts_prefix_token, parse_query, porter_stem
from tests.factories import text_paper
from tests.shared_files import FIXTURES
from tests.topics.strategies import papers, queries

FTS_SCHEMA = f"""
CREATE TABLE papers (pk INTEGER PRIMARY KEY, title TEXT NOT NULL, abstract TEXT NOT NULL, authors TEXT NOT NULL);
CREATE VIRTUAL TABLE papers_fts USING fts5(title, abstract, authors,
    content='papers', content_rowid='pk', tokenize='{PAPERS_TOKENIZER}');
"""


@contextmanager
def fts_index(corpus: Sequence[Paper]) -> Iterator[sqlite3.Connection]:
    """An in-memory copy of the store's FTS table over `corpus`; rowid = position in corpus."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(FTS_SCHEMA)
        db.executemany(
            "INSERT INTO papers (pk, title, abstract, authors) VALUES (?, ?, ?, ?)",
            [(i, p.title, p.abstract, ", ".join(a.name for a in p.authors)) for i, p in enumerate(corpus)],
        )
        db.execute("INSERT INTO papers_fts(papers_fts) VALUES ('rebuild')")
        yield db


def candidates(db: sqlite3.Connection, expression: str) -> set[int]:
    return {
        row[0] for row in db.execute("SELECT rowid FROM papers_fts WHERE papers_fts MATCH ?", (expression,))
    }


def assert_prefilter_keeps_matches(db: sqlite3.Connection, corpus: Sequence[Paper], text: str) -> None:
    query = parse_query(text)
    expression = query.to_fts5()
    if expression is None:
        return  # the caller scans by date/category instead
    matching = {i for i, paper in enumerate(corpus) if query.matches(paper)}
    missed = matching - candidates(db, expression)
    assert not missed, f"{text!r} -> {expression!r} dropped {[corpus[i].title for i in missed]}"


async def test_the_copy_is_the_migrated_stores_table(store: Store) -> None:
    # The migration cannot import PAPERS_TOKENIZER: the store's table must still say it, column for column.
    row = await store.db.fetchone("SELECT sql FROM sqlite_master WHERE name = 'papers_fts'")
    assert row is not None
    tokenizer = re.search(r"tokenize\s*=\s*'([^']*)'", row[0])
    assert tokenizer is not None and tokenizer.group(1) == PAPERS_TOKENIZER
    columns = [r[1] for r in await store.db.fetchall("PRAGMA table_info(papers_fts)")]
    with fts_index([]) as db:
        assert [r[1] for r in db.execute("PRAGMA table_info(papers_fts)")] == columns
    assert columns == ["title", "abstract", "authors"]


# ---- Properties ------------------------------------------------------------------------------------------


@settings(max_examples=250, deadline=None)
@given(st.lists(papers, min_size=1, max_size=8), st.lists(queries, min_size=1, max_size=6))
def test_every_match_is_an_fts_candidate(corpus: list[Paper], texts: list[str]) -> None:
    with fts_index(corpus) as db:
        for text in texts:
            try:
                assert_prefilter_keeps_matches(db, corpus, text)
            except QuerySyntaxError:
                continue


def _recorded_papers() -> list[Paper]:
    """Real titles, abstracts and author names from the recorded arXiv API pages."""
    ns = {"a": "http://www.w3.org/2005/Atom"}
    out = []
    for name in ("api_query_testing_100.xml", "api_query_legacy_10.xml"):
        root = etree.parse(str(FIXTURES / name)).getroot()
        for i, entry in enumerate(root.iterfind("a:entry", ns)):
            out.append(
                text_paper(
                    title=" ".join(entry.findtext("a:title", "", ns).split()),
                    abstract=" ".join(entry.findtext("a:summary", "", ns).split()),
                    authors=tuple(a.findtext("a:name", "", ns) for a in entry.iterfind("a:author", ns)),
                    arxiv_id=f"2601.{i:05d}",
                )
            )
    return out


def test_prefilter_on_recorded_arxiv_papers() -> None:
    corpus = _recorded_papers()
    assert len(corpus) == 110
    rng = random.Random(20261129)
    vocabulary = sorted({w for p in corpus for w in fold_words(f"{p.title} {p.abstract}")})
    names = sorted({w for p in corpus for a in p.authors for w in fold_words(a.name)})

    def term() -> str:
        word = rng.choice(vocabulary)
        kind = rng.random()
        if kind < 0.25:
            return word[: rng.randint(1, len(word))] + "*"
        if kind < 0.45:
            return '"' + " ".join(rng.choice(vocabulary) for _ in range(2)) + '"'
        if kind < 0.55:
            return "au:" + rng.choice(names)
        return rng.choice(("", "ti:", "abs:")) + word

    with fts_index(corpus) as db:
        for _ in range(400):
            text = term()
            for _ in range(rng.randint(0, 2)):
                text = f"({text} {rng.choice(('AND', 'OR', 'ANDNOT'))} {term()})"
            assert_prefilter_keeps_matches(db, corpus, text)
        # the phrases below occur in those pages: the prefilter must be selective, not merely safe
        narrow = parse_query('"software testing"').to_fts5()
        assert narrow is not None and 0 < len(candidates(db, narrow)) < len(corpus) // 2


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab é\"*():-ANDORTtiu\\'ß²"), max_size=30))
def test_any_parsed_query_gives_an_expression_sqlite_accepts(text: str) -> None:
    try:
        expression = parse_query(text).to_fts5()
    except QuerySyntaxError:
        return
    if expression is not None:
        with fts_index([text_paper(title="a b")]) as db:
            candidates(db, expression)  # raises sqlite3.OperationalError on bad syntax


_STEMMER_ALPHABET = "aeiouybcdglmnrstvzwxk"
_SUFFIXES = (
    "", "s", "es", "ies", "sses", "ed", "eed", "ing", "ational", "tional", "ization", "ation", "ness", "ful",
    "li", "alli", "biliti", "ement", "ion", "ism", "y", "e", "ll", "izer", "ousli", "iveness", "alize", "able",
)  # fmt: skip
_stemmer_words = st.tuples(
    st.text(alphabet=_STEMMER_ALPHABET + "é", min_size=1, max_size=8), st.sampled_from(_SUFFIXES)
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_stemmer_words, min_size=1, max_size=30))
def test_porter_port_stems_exactly_like_sqlite(words: list[str]) -> None:
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{PAPERS_TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(words)))
        stored = {doc: term for doc, term in db.execute("SELECT doc, term FROM v")}
    assert {i: porter_stem(fold_words(w)[0]).decode() for i, w in enumerate(words)} == stored


_NASTY = (
    "aZ09 -_.,'\"éÉüßẞﬁ²₂ΣσςάĳŁłØøİıǅ\u0301\u0308\u200b\u00a0\tнйЁ漢字한𝐱\U0001f600\u2160\u212a\u00b5\ud800"
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=_NASTY, max_size=25), min_size=1, max_size=20))
def test_folding_splits_words_exactly_like_sqlite(texts: list[str]) -> None:
    encodable = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # SQLite refuses surrogates
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FOLDING_TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(encodable)))
        stored: dict[int, list[str]] = {}
        for doc, term in db.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
            stored.setdefault(doc, []).append(term)
    assert {i: fold_words(t) for i, t in enumerate(encodable) if fold_words(t)} == stored


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_STEMMER_ALPHABET, min_size=2, max_size=9), st.lists(_stemmer_words, max_size=10))
def test_prefix_token_survives_stemming_of_every_longer_word(prefix: str, tails: list[str]) -> None:
    token = fts_prefix_token(prefix)
    if token is None:
        return
    assert prefix.startswith(token)
    stem = porter_stem(token)
    for tail in ["", *tails]:
        assert porter_stem(prefix + tail).startswith(stem), prefix + tail


# ---- The tricky cases, one by one ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "paper", "naive"),
    [
        # porter stems "buses" to "buse" but "bus" to "bu": the plural rule needs both spellings
        ("bus", {"title": "Electric buses"}, '"bus"'),
        ("policy", {"title": "Diffusion policies"}, None),
        ("classes", {"title": "one class"}, None),
        # a prefix is stemmed by FTS too, and stored words are stems: "modeling" is stored as "model"
        ("modelin*", {"title": "Modeling"}, '"modelin"*'),
        ("happy*", {"title": "happyish"}, None),
        ("generaliz*", {"title": "generalizations"}, '"generaliz"*'),
        ("ti:transform*", {"title": "transforment"}, 'title : "transform"*'),
        ('"language model"', {"abstract": "large language models"}, None),
        ("language-modelin*", {"abstract": "language modeling"}, '"language modelin"*'),
        ("post-training", {"title": "post training"}, None),
        ('"post training"', {"title": "post-training"}, None),
        ("au:muller", {"authors": ("Thomas Müller",)}, None),
        ("Müller", {"authors": ("Anna Muller",)}, None),
        ("au:Hinton_G", {"authors": ("Geoffrey Hinton",)}, None),
        ('au:"Hinton Geoffrey"', {"authors": ("Geoffrey E. Hinton",)}, 'authors : "hinton geoffrey"'),
        ("Straße", {"title": "Die Straße"}, None),
        ("x²", {"title": "x² loss"}, None),
        ("diffusion ANDNOT robot", {"title": "diffusion"}, None),
        ("cafe", {"title": "cafe\u0301"}, None),
    ],
)
def test_tricky_cases_stay_candidates(query: str, paper: dict[str, object], naive: str | None) -> None:
    corpus = [text_paper(**paper), text_paper(title="unrelated words only")]  # type: ignore[arg-type]
    parsed = parse_query(query)
    assert parsed.matches(corpus[0])
    expression = parsed.to_fts5()
    assert expression is not None
    with fts_index(corpus) as db:
        assert candidates(db, expression) == {0}
        if naive is not None:  # the obvious translation really would have dropped the paper
            assert 0 not in candidates(db, naive)


@pytest.mark.parametrize(
    "query",
    [
        "cat:cs.LG",
        "cat:cs.* ANDNOT ti:survey",
        "diffusion OR cat:cs.LG",
        "co:workshop",
        "id:2401.12345",
        "a*",
    ],
)
def test_no_prefilter_when_nothing_textual_constrains_every_match(query: str) -> None:
    assert parse_query(query).to_fts5() is None


def test_negations_are_left_to_the_evaluator_and_categories_widen() -> None:
    query = parse_query("cat:cs.LG AND ti:diffusion ANDNOT abs:robot")
    assert query.to_fts5() == 'title : "diffusion"'


def test_a_word_in_every_field_takes_no_column_filter() -> None:
    # `all` covers every column of papers_fts: a filter naming them all selects nothing more, and FTS5 applies
    # one by decoding each position list of the word (4x the cost of ranking a common word at 1M papers).
    assert parse_query("diffusion").to_fts5() == '"diffusion"'
    assert parse_query("all:diffus* AND ti:model").to_fts5() == '("diffus"* AND title : "model")'


def test_user_text_cannot_inject_fts_syntax() -> None:
    query = parse_query('"NEAR title" OR ti:"abstract OR" OR col*')
    expression = query.to_fts5()
    assert expression is not None
    assert "NEAR(" not in expression and "title :" in expression
    corpus = [text_paper(title="near title"), text_paper(title="abstract or"), text_paper(title="other")]
    with fts_index(corpus) as db:
        assert candidates(db, expression) == {0, 1}

"""Topic queries: the grammar and its errors, local matching semantics, and the arXiv translation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import PaperwatchError
from bot.models import Paper
from bot.topics.query import (
    MAX_QUERY_LENGTH,
    PaperText,
    QuerySyntaxError,
    TopicQuery,
    parse_query,
    plurals_of,
    word_forms,
)
from tests.factories import text_paper
from tests.topics.strategies import papers, queries


def matches(query: str, **paper: object) -> bool:
    return parse_query(query).matches(text_paper(**paper))  # type: ignore[arg-type]


# ---- Grammar and errors ----------------------------------------------------------------------------------

_QUERYISH = st.lists(
    st.sampled_from(
        (
            "ti:", "au:", "cat:", "id:", "co:", "jr:", "all:", "foo:", "AND", "OR", "ANDNOT", "NOT", "TO",
            "(", ")", '"', "'", "*", "?", ":", "-", "+", "~", "^", "[", "]", "{", "}", "/", "\\", " ", "  ",
            "model", "cs.LG", "cs.*", "2401.12345", "é", "ß", "\u0301", "x²", "\n", "\x00",
        )
    ),
    max_size=14,
).map("".join)  # fmt: skip


@settings(max_examples=400)
@given(st.one_of(st.text(max_size=60), _QUERYISH, queries))
def test_parse_returns_a_query_or_a_positioned_syntax_error(text: str) -> None:
    try:
        query = parse_query(text)
    except QuerySyntaxError as err:
        assert 0 <= err.position <= len(text)
        assert str(err).startswith(f"position {err.position}: expected ")
        assert "\n" not in str(err)
        caret_line = err.pointer().split("\n")[-1]
        assert caret_line == " " * err.position + "^"
        return
    # A parsed query must be usable everywhere without raising.
    query.matches(text_paper(title="model", abstract="cs.LG"))
    query.to_fts5()
    query.to_arxiv()
    query.categories()
    query.index_keys()


@pytest.mark.parametrize(
    ("text", "position", "expected"),
    [
        ("ti:foo AND", 10, "a term, a phrase or '(' after AND"),
        ("ti:foo ANDNOT", 13, "a term, a phrase or '(' after ANDNOT"),
        ("(a OR b", 7, "')' to close the '(' at 0"),
        ("a OR (b AND (c OR d)", 20, "')' to close the '(' at 5"),
        ("foo:bar", 0, "a field among ti:, abs:, au:, co:, jr:, cat:, id:, all:, not 'foo'"),
        ('"unclosed', 9, "'\"' to close the phrase opened at 0"),
        ('ti:"a b" OR "unclosed', 21, "'\"' to close the phrase opened at 12"),
        ("", 0, "a term, a phrase or '(': the query is empty"),
        ("   ", 0, "a term, a phrase or '(': the query is empty"),
        ("AND model", 0, "a term, a phrase or '(' before AND"),
        ("model)", 5, "AND, OR, a term or the end of the query; this ')' closes nothing"),
        ("ti:()", 4, "a term, a phrase or '(' after '('"),
        ("NOT model", 0, "a positive term before NOT: a topic cannot be only a negation"),
        ("a OR NOT b", 5, "a positive term before NOT: a topic cannot be only a negation"),
        ("ti:a:b", 3, "a term, a phrase or '(' inside ti:(...), not another field"),
        ("mod*el", 3, "'*' only at the end of a term ('?' is not supported)"),
        ("model -survey", 6, "a term; use ANDNOT (or NOT) instead of '-'"),
        ("cat:cs..LG", 4, "a category like cs.LG, hep-th or cs.*"),
        ("id:notanid", 3, "an arXiv id like 2401.12345 or hep-th/9901001"),
        ("ti:&&", 3, "a word with letters or digits"),
        ("'phrase'", 0, "a term, a phrase or '('; use double quotes for phrases"),
    ],
)
def test_syntax_errors_say_where_and_what(text: str, position: int, expected: str) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query(text)
    assert (caught.value.position, caught.value.expected) == (position, expected)
    assert str(caught.value) == f"position {position}: expected {expected}"


def test_error_pointer_puts_a_caret_under_the_position() -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query("ti:foo AND")
    assert caught.value.pointer() == "ti:foo AND\n          ^"
    assert isinstance(caught.value, PaperwatchError)


def test_too_long_queries_are_rejected_at_the_limit() -> None:
    parse_query("x" * MAX_QUERY_LENGTH)
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query("x" * (MAX_QUERY_LENGTH + 1))
    assert caught.value.position == MAX_QUERY_LENGTH
    assert "at most 500 characters" in caught.value.expected


def test_queries_compare_by_text() -> None:
    assert TopicQuery("ti:model") == parse_query("ti:model")
    assert hash(TopicQuery("ti:model")) == hash(parse_query("ti:model"))
    assert TopicQuery("ti:model") != TopicQuery("ti:models")


# ---- Local semantics -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "paper", "expected"),
    [
        # fields
        ("ti:diffusion", {"title": "Diffusion policies"}, True),
        ("ti:diffusion", {"abstract": "diffusion"}, False),
        ("abs:diffusion", {"abstract": "We study diffusion."}, True),
        ("abs:diffusion", {"title": "diffusion"}, False),
        ("diffusion", {"abstract": "diffusion"}, True),
        ("all:hinton", {"authors": ("Geoffrey Hinton",)}, True),
        ("co:workshop", {"comment": "NeurIPS 2026 Workshop"}, True),
        ("co:workshop", {"abstract": "workshop"}, False),
        ("jr:nature", {"journal_ref": "Nature 600, 1-5 (2026)"}, True),
        ("id:2603.01234", {"arxiv_id": "2603.01234"}, True),
        ("id:2603.01234v3", {"arxiv_id": "2603.01234"}, True),
        ("id:2603.01235", {"arxiv_id": "2603.01234"}, False),
        ("id:2603.*", {"arxiv_id": "2603.01234"}, True),
        ("TI:diffusion", {"title": "diffusion"}, True),
        # whole words, case and accents
        ("RL", {"abstract": "fetch the URL"}, False),
        ("RL", {"abstract": "offline rl."}, True),
        ("naive", {"title": "A naïve baseline"}, True),
        ("naïve", {"title": "A NAIVE baseline"}, True),
        ("au:muller", {"authors": ("Thomas Müller",)}, True),
        ("au:Müller", {"authors": ("Anna Muller",)}, True),
        ("cafe", {"title": "cafe\u0301 au lait"}, True),
        # plurals, both ways, incl. -ies and -es
        ("model", {"title": "Language models"}, True),
        ("models", {"title": "A language model"}, True),
        ("policy", {"title": "Diffusion policies"}, True),
        ("policies", {"title": "One policy"}, True),
        ("box", {"title": "bounding boxes"}, True),
        ("classes", {"title": "one class"}, True),
        ("GPU", {"title": "many GPUs"}, True),
        ("causes", {"title": "root cause"}, True),
        ("model", {"title": "modeling"}, False),
        # phrases
        ('"language model"', {"abstract": "large language models are"}, True),
        ('"language model"', {"abstract": "model of language"}, False),
        ('"language model"', {"title": "language", "abstract": "model"}, False),
        # hyphens and spaces are interchangeable; a closed compound is another word
        ("post-training", {"title": "Post training at scale"}, True),
        ('"post training"', {"title": "RL post-training"}, True),
        ("post-training", {"title": "post-training"}, True),
        ("post-training", {"title": "posttraining"}, False),
        ("posttraining", {"title": "post-training"}, False),
        ("post-training", {"title": "training post"}, False),
        # prefixes
        ("diffus*", {"title": "Diffusive transport"}, True),
        ("diffus*", {"title": "confusion"}, False),
        ("ti:transform*", {"title": "Transformers"}, True),
        ("post-train*", {"title": "post-training"}, True),
        ("post-train*", {"title": "training post"}, False),
        # boolean operators
        ("diffusion AND robot", {"title": "diffusion for robots"}, True),
        ("diffusion AND robot", {"title": "diffusion"}, False),
        ("diffusion robot", {"title": "diffusion"}, False),
        ("diffusion OR robot", {"title": "robots"}, True),
        ("diffusion ANDNOT robot", {"title": "diffusion for robots"}, False),
        ("diffusion ANDNOT robot", {"title": "diffusion for images"}, True),
        ("diffusion NOT robot", {"title": "diffusion for robots"}, False),
        ("diffusion AND NOT robot", {"title": "diffusion"}, True),
        ("(a OR b) AND c", {"title": "b c"}, True),
        ("(a OR b) AND c", {"title": "a b"}, False),
        ("a AND (b OR c) ANDNOT (d OR e)", {"title": "a c e"}, False),
        ("a AND (b OR c) ANDNOT (d OR e)", {"title": "a c"}, True),
        ("ti:(graph OR tree) AND abs:neural", {"title": "trees", "abstract": "neural"}, True),
        # categories
        ("cat:cs.LG", {"categories": ("cs.CL", "cs.LG")}, True),
        ("cat:cs.lg", {"categories": ("cs.LG",)}, True),
        ("cat:cs.LG", {"categories": ("cs.CL",)}, False),
        ("cat:cs.*", {"categories": ("stat.ML", "cs.CV")}, True),
        ("cat:cs.*", {"categories": ("stat.ML",)}, False),
        ("cat:hep-th", {"categories": ("hep-th",)}, True),
        ("cat:cs.LG ANDNOT ti:survey", {"title": "A survey", "categories": ("cs.LG",)}, False),
        # authors: one author's name, any order, initials
        ("au:hinton", {"authors": ("Geoffrey E. Hinton", "Yann LeCun")}, True),
        ('au:"Geoffrey Hinton"', {"authors": ("Geoffrey E. Hinton",)}, True),
        ('au:"Hinton Geoffrey"', {"authors": ("Geoffrey Hinton",)}, True),
        ("au:Hinton_G", {"authors": ("Geoffrey Hinton",)}, True),
        ("au:Hinton_Y", {"authors": ("Geoffrey Hinton",)}, False),
        ('au:"Geoffrey LeCun"', {"authors": ("Geoffrey Hinton", "Yann LeCun")}, False),
        ("au:hint*", {"authors": ("Geoffrey Hinton",)}, True),
        ("au:hinton", {"title": "Hinton"}, False),
        ("au:o'brien", {"authors": ("Sean O'Brien",)}, True),
    ],
)
def test_matching_semantics(query: str, paper: dict[str, object], expected: bool) -> None:
    assert matches(query, **paper) is expected


def test_sharp_s_and_ligatures_are_kept_as_the_fts_index_keeps_them() -> None:
    # FTS5's unicode61 does not fold ß or ligatures; folding them locally would let the prefilter miss.
    assert matches("Straße", title="Die Straße")
    assert not matches("strasse", title="Die Straße")
    assert matches("ﬁne", title="ﬁne tuning")
    assert not matches("fine", title="ﬁne tuning")


@given(st.text(alphabet="abcdeilsxyzh", min_size=1, max_size=9))
def test_plural_rules_are_inverse_of_each_other(word: str) -> None:
    # to_fts5 enumerates a word's variants through plurals_of: it must find every word with a shared form.
    for form in word_forms(word):
        assert form == word or word in plurals_of(form)
        for plural in plurals_of(form):
            assert form in word_forms(plural)


# ---- Translations and metadata ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "arxiv"),
    [
        ("diffusion", "all:diffusion"),
        ('ti:"language models" AND au:hinton', 'ti:"language models" AND au:hinton'),
        ("a b OR c", "all:a AND (all:b OR all:c)"),
        ("ti:(graph OR tree)", "ti:graph OR ti:tree"),
        ("a ANDNOT b", "all:a ANDNOT all:b"),
        ("a NOT b", "all:a ANDNOT all:b"),
        ("a AND b ANDNOT c", "(all:a AND all:b) ANDNOT all:c"),
        ("a ANDNOT b ANDNOT c", "all:a ANDNOT (all:b OR all:c)"),
        ("(a OR b) ANDNOT (c OR d)", "(all:a OR all:b) ANDNOT (all:c OR all:d)"),
        ("cat:cs.LG AND diffus*", "cat:cs.LG AND all:diffus*"),
    ],
)
def test_to_arxiv_is_explicit_and_parenthesised(query: str, arxiv: str) -> None:
    assert parse_query(query).to_arxiv() == arxiv


@settings(max_examples=150)
@given(queries, st.lists(papers, min_size=1, max_size=4))
def test_to_arxiv_reparses_to_the_same_meaning(text: str, corpus: list[Paper]) -> None:
    try:
        query = parse_query(text)
    except QuerySyntaxError:
        return
    again = parse_query(query.to_arxiv())
    assert [again.matches(p) for p in corpus] == [query.matches(p) for p in corpus]


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        ("(cat:cs.LG OR cat:stat.ML) AND diffusion ANDNOT cat:cs.CV", {"cs.lg", "stat.ml"}),
        ("cat:CS.cl AND ti:parsing", {"cs.cl"}),
        ("(cat:cs.CL AND ti:a) OR (cat:cs.RO AND ti:b)", {"cs.cl", "cs.ro"}),
        ("cat:cs.RO AND (cat:cs.LG OR cat:cs.AI OR cat:stat.ML)", {"cs.ro"}),
        # no bound: a branch free of categories, a prefix, only a negated category, no category at all
        ("cat:cs.CL OR ti:parsing", set()),
        ("cat:stat.* AND diffusion", set()),
        ("diffusion ANDNOT cat:cs.CV", set()),
        ("diffusion", set()),
    ],
)
def test_categories_bind_every_match(text: str, bound: set[str]) -> None:
    query = parse_query(text)
    assert query.categories() == frozenset(bound)
    # what it promises: a matching paper always has one of them
    if bound:
        for cats in (("cs.CL",), ("cs.RO", "cs.LG"), ("stat.ML",), ("math.CO",)):
            paper = text_paper(title="a b parsing diffusion", abstract="a b", categories=cats)
            if query.matches(paper):
                assert {c.casefold() for c in cats} & bound


@pytest.mark.parametrize(
    ("query", "keys"),
    [
        ("diffusion", {"diffusion"}),
        ("models", {"models", "model"}),
        ("cat:cs.LG", {"cat:cs.lg"}),
        ("cat:cs.*", None),
        ("diffus*", None),
        ("diffusion OR robot", {"diffusion", "robot"}),
        ("diffusion OR diffus*", None),
        ("the AND transformer", {"transformer"}),
        ("cat:cs.LG AND transformer", {"transformer"}),
        ("diffusion ANDNOT robot", {"diffusion"}),
        ("cat:cs.* ANDNOT robot", None),
        ("id:2401.12345v2", {"id:2401.12345"}),
        ('au:"Geoffrey Hinton"', {"geoffrey"}),
    ],
)
def test_index_keys_pick_a_required_and_selective_key(query: str, keys: set[str] | None) -> None:
    expected = None if keys is None else frozenset(keys)
    assert parse_query(query).index_keys() == expected


@settings(max_examples=200)
@given(queries, papers)
def test_a_matching_paper_always_holds_one_of_the_index_keys(text: str, paper: Paper) -> None:
    try:
        query = parse_query(text)
    except QuerySyntaxError:
        return
    keys = query.index_keys()
    if keys is not None and query.matches(paper):
        assert keys & PaperText.of(paper).keys


@given(st.lists(st.text(alphabet="abcehisxyz", min_size=1, max_size=8), max_size=30))
def test_a_papers_index_keys_hold_every_form_of_every_word(words: list[str]) -> None:
    # The matcher finds a paper's topics through these keys: a form left out would lose that topic's matches.
    paper = text_paper(title=" ".join(words), authors=(), categories=("cs.LG",), arxiv_id="2603.01234")
    expected = frozenset().union(*map(word_forms, words)) | {"cat:cs.lg", "id:2603.01234"}
    assert PaperText(paper).keys == expected

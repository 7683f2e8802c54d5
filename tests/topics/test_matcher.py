"""The fan-out matcher: the same answers as evaluating every topic, while evaluating far fewer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.models import Paper
from bot.topics.matcher import Matcher
from bot.topics.query import PaperText, QuerySyntaxError, TopicQuery, parse_query
from tests.factories import text_paper
from tests.topics.strategies import papers, queries


def _parsed(texts: list[str]) -> list[tuple[int, TopicQuery]]:
    out = []
    for topic_id, text in enumerate(texts):
        try:
            out.append((topic_id, parse_query(text)))
        except QuerySyntaxError:
            continue
    return out


def brute_force(topics: list[tuple[int, TopicQuery]], paper: Paper) -> set[int]:
    return {topic_id for topic_id, query in topics if query.matches(paper)}


@settings(max_examples=200, deadline=None)
@given(st.lists(queries, min_size=1, max_size=25), st.lists(papers, min_size=1, max_size=5))
def test_index_finds_exactly_what_brute_force_finds(texts: list[str], corpus: list[Paper]) -> None:
    topics = _parsed(texts)
    matcher = Matcher(topics)
    for paper in corpus:
        assert matcher.match(paper) == brute_force(topics, paper)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(queries, min_size=2, max_size=15),
    st.lists(st.integers(0, 14), max_size=10),
    st.lists(papers, min_size=1, max_size=3),
)
def test_removing_topics_keeps_the_index_exact(
    texts: list[str], removed: list[int], corpus: list[Paper]
) -> None:
    topics = _parsed(texts)
    matcher = Matcher(topics)
    for topic_id in removed:
        matcher.remove(topic_id)
    remaining = [(i, q) for i, q in topics if i not in removed]
    assert len(matcher) == len(remaining)
    for paper in corpus:
        assert matcher.match(paper) == brute_force(remaining, paper)


def test_add_replaces_and_remove_forgets() -> None:
    paper = text_paper(title="Diffusion policies for robots")
    matcher = Matcher([(1, parse_query("ti:diffusion")), (2, parse_query("ti:transformer"))])
    assert matcher.match(paper) == {1}

    matcher.add(2, parse_query("ti:robot"))  # same id, new query: the old one is gone from the index
    assert matcher.match(paper) == {1, 2}
    assert matcher.match(text_paper(title="transformer")) == set()

    matcher.remove(1)
    matcher.remove(1)  # idempotent
    matcher.remove(99)  # unknown ids are ignored
    assert matcher.match(paper) == {2}
    assert 1 not in matcher and 2 in matcher and len(matcher) == 1


def test_topics_without_keys_are_evaluated_on_every_paper() -> None:
    matcher = Matcher([(1, parse_query("cat:cs.*")), (2, parse_query("diffus*")), (3, parse_query("robot"))])
    paper = text_paper(title="Diffusive flows", categories=("cs.LG",))
    assert matcher.candidates(PaperText.of(paper)) == {1, 2}
    assert matcher.match(paper) == {1, 2}
    assert matcher.match(text_paper(title="robots", categories=("stat.ML",))) == {3}


def test_the_index_prunes_topics_a_paper_cannot_match() -> None:
    matcher = Matcher(
        [
            (1, parse_query("diffusion AND robot")),
            (2, parse_query('"graph neural network"')),
            (3, parse_query("transformer OR attention")),
            (4, parse_query("cat:cs.CV")),
            (5, parse_query("cat:cs.LG AND quantum")),
        ]
    )
    paper = text_paper(title="Attention for robots", categories=("cs.LG",))
    # 1 is filed under its more selective word "diffusion", 5 under "quantum" rather than its category
    assert matcher.candidates(PaperText.of(paper)) == {3}
    assert matcher.match(paper) == {3}


def test_match_many_maps_ids_of_matching_papers_only() -> None:
    matcher = Matcher([(7, parse_query("diffusion")), (8, parse_query("diffusion OR robot"))])
    corpus = [
        text_paper(title="diffusion", arxiv_id="2601.00001"),
        text_paper(title="robot", arxiv_id="2601.00002"),
        text_paper(title="nothing", arxiv_id="2601.00003"),
    ]
    assert matcher.match_many(corpus) == {"2601.00001": {7, 8}, "2601.00002": {8}}
    assert matcher.match_many([]) == {}

"""Query-shaped papers (built by tests.factories.text_paper) and Hypothesis strategies shared by the query, FTS5
prefilter and matcher tests.

The words, names and categories are chosen to hit the hard cases of matching; the three test modules draw
the same queries and papers, so a property that holds in one holds over the same ground in the others.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.factories import text_paper

# Words chosen to hit the hard cases: plurals (incl. ones Porter stems apart), hyphens vs closed compounds,
# accents, ß and ligatures that FTS5 does not fold, words that are prefixes of others, stemmer traps.
TEXT_WORDS = (
    "model", "models", "modeling", "modelling", "modeli", "policy", "policies", "bus", "buses", "box",
    "boxes", "class", "classes", "cause", "causes", "news", "new", "post", "training", "post-training",
    "posttraining", "learn", "learning", "learner", "happy", "happyish", "happiness", "general",
    "generalization", "generalizations", "relational", "relate", "transform", "transformer", "transforment",
    "diffusion", "diffusive", "rl", "url", "llm", "llms", "gpu", "GPUs", "series", "naïve", "naive",
    "Straße", "strasse", "ﬁne", "fine", "x²", "x2", "caf\u00e9", "cafe\u0301", "graph", "graphs", "a", "of",
)  # fmt: skip
NAMES = (
    "Thomas Müller", "Anna Muller", "Geoffrey E. Hinton", "José García", "Jose Garcia", "Łukasz Kaiser",
    "Zoë Smith", "Nguyễn Văn An", "Sean O'Brien", "Yann LeCun",
)  # fmt: skip
QUERY_WORDS = (*TEXT_WORDS, "Müller", "muller", "hinton", "garcia", "lukasz", "zoe", "nguyen", "lecun")
CATEGORIES = ("cs.LG", "cs.CL", "cs.CV", "stat.ML", "hep-th", "math.OC")


def _prefix(word: str) -> st.SearchStrategy[str]:
    return st.integers(1, max(1, len(word))).map(lambda n: word[:n] + "*")


_word = st.sampled_from(QUERY_WORDS)
_term = st.one_of(
    _word,
    _word.flatmap(_prefix),
    st.lists(_word, min_size=2, max_size=3).map(lambda ws: '"' + " ".join(ws) + '"'),
)
_text_leaf = st.tuples(st.sampled_from(("", "ti:", "abs:", "au:", "all:")), _term).map("".join)
_cat_leaf = st.one_of(
    st.sampled_from(CATEGORIES).map(lambda c: f"cat:{c}"),
    st.sampled_from(("cat:cs.*", "cat:stat*", "cat:hep-*")),
)
_leaf = st.one_of(_text_leaf, _text_leaf, _text_leaf, _cat_leaf)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(children, st.sampled_from((" AND ", " OR ", " ANDNOT ", " NOT ", " ")), children).map(
        lambda t: f"({t[0]}{t[1]}{t[2]})"
    )


queries = st.recursive(_leaf, _combine, max_leaves=5)

_title = st.lists(st.sampled_from(TEXT_WORDS), min_size=1, max_size=6).map(" ".join)
_abstract = st.lists(st.sampled_from(TEXT_WORDS), min_size=0, max_size=14).map(" ".join)
papers = st.builds(
    text_paper,
    title=_title,
    abstract=_abstract,
    authors=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True).map(tuple),
    categories=st.lists(st.sampled_from(CATEGORIES), min_size=1, max_size=2, unique=True).map(tuple),
)

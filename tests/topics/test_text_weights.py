"""The bot's NumPy word features equal scikit-learn's (bot/topics/text_weights.py): hashed rows column for
column, TF-IDF weights value for value; and a scorer's sparse weights score as the dense ones did."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import (
    ENGLISH_STOP_WORDS,
    HashingVectorizer,
    TfidfTransformer,
    TfidfVectorizer,
)

from bot.ask.question import stems
from bot.topics.scorer import N_FEATURES, Featurizer, SparseWeights, paper_text
from bot.topics.text_weights import ENGLISH_STOP_WORDS as OURS
from bot.topics.text_weights import hashed_counts, term_counts, tfidf
from tests.topics.scorer_corpus import corpus

ODD = [
    "",
    "a the of and",  # stop words only
    "Ünïcode façade naïve café 東京大学 ΑΒΓ résumé x y z",
    "repeat repeat repeat repeat Repeat REPEAT",
    "hyphen-ated words, digits 3d 42 and_under_scores",
]


def sklearn_hashing() -> HashingVectorizer:
    return HashingVectorizer(
        n_features=N_FEATURES,
        ngram_range=(1, 2),
        stop_words=sorted(ENGLISH_STOP_WORDS),
        alternate_sign=False,
        norm=None,
        dtype=np.float32,
    )


def same(a: sp.csr_matrix, b: sp.csr_matrix) -> bool:
    a, b = sp.csr_matrix(a), sp.csr_matrix(b)
    a.sort_indices()
    b.sort_indices()
    return (
        a.shape == b.shape
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
        and np.allclose(a.data, b.data, rtol=1e-6)
    )


def test_the_stop_words_are_scikit_learns() -> None:
    assert frozenset(ENGLISH_STOP_WORDS) == OURS


def test_hashed_rows_equal_scikit_learns_hashing_vectorizer() -> None:
    texts = [paper_text(p.title, p.abstract) for p in corpus()] + ODD
    assert same(hashed_counts(texts, N_FEATURES), sklearn_hashing().transform(texts))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=200), min_size=1, max_size=5))  # scikit-learn refuses no texts
def test_hashed_rows_equal_scikit_learns_for_any_text(texts: list[str]) -> None:
    assert same(hashed_counts(texts, N_FEATURES), sklearn_hashing().transform(texts))


def test_tfidf_over_stems_gives_the_likeness_scikit_learn_gave() -> None:
    """/ask's sentence ranking: the same cosine between every two texts (columns may be in another order)."""
    texts = ["which decoders reach the threshold?", *(p.abstract for p in corpus()[:40]), *ODD]
    ours = tfidf(term_counts(texts, stems))
    theirs = TfidfVectorizer(analyzer=stems, sublinear_tf=True).fit_transform(texts)
    assert np.allclose((ours @ ours.T).toarray(), (theirs @ theirs.T).toarray())


def test_tfidf_of_counts_equals_scikit_learns_transformer() -> None:
    counts = sp.csr_matrix(np.random.default_rng(0).integers(0, 3, size=(30, 12)).astype(float))
    assert same(tfidf(counts), TfidfTransformer(sublinear_tf=True).fit_transform(counts))


def test_sparse_weights_score_rows_as_the_dense_weights_do() -> None:
    texts = [paper_text(p.title, p.abstract) for p in corpus()]
    featurizer = Featurizer.fit(texts)
    rows = featurizer.transform([*texts, ""])
    dense = np.zeros(N_FEATURES, dtype=np.float32)
    columns = np.random.default_rng(1).choice(N_FEATURES, 5_000, replace=False)
    dense[columns] = np.random.default_rng(2).normal(size=5_000)
    dense[rows[0].indices[:3]] = 1.5  # some columns the rows do hold
    weights = SparseWeights.of(dense)
    assert len(weights.columns) == np.count_nonzero(dense)
    assert np.allclose(weights.dot(rows), np.asarray(rows @ dense).ravel(), atol=1e-6)
    assert weights.dot(rows)[-1] == 0.0

"""The bot's NumPy word features equal scikit-learn's (bot/topics/text_weights.py): hashed rows column for
column, TF-IDF weights value for value; and a scorer's sparse weights score as the dense ones did."""

from __future__ import annotations

import numpy as np
import pytest
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
from bot.topics.scorer import N_FEATURES, Featurizer, LinearWeights, paper_text
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


@pytest.mark.parametrize("nonzero", [5_000, 200_000])
def test_weights_are_held_in_the_smaller_form_and_score_rows_as_dense_ones(nonzero: int) -> None:
    texts = [paper_text(p.title, p.abstract) for p in corpus()]
    featurizer = Featurizer.fit(texts)
    rows = featurizer.transform([*texts, ""])
    dense = np.zeros(N_FEATURES, dtype=np.float32)
    columns = np.random.default_rng(1).choice(N_FEATURES, nonzero, replace=False)
    dense[columns] = np.random.default_rng(2).normal(size=nonzero)
    dense[rows[0].indices[:3]] = 1.5  # some columns the rows do hold
    weights = LinearWeights.of(dense)
    held = weights.values.nbytes + (0 if weights.columns is None else weights.columns.nbytes)
    assert held <= min(8 * np.count_nonzero(dense), 4 * N_FEATURES)
    assert (weights.columns is None) == (nonzero == 200_000)
    assert np.allclose(weights.dot(rows), np.asarray(rows @ dense).ravel(), atol=1e-5)
    assert weights.dot(rows)[-1] == 0.0
    kept_columns, kept_values = weights.nonzero()  # what the model file keeps
    assert np.array_equal(kept_columns, np.flatnonzero(dense)) and np.array_equal(
        kept_values, dense[kept_columns]
    )

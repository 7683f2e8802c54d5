"""The bot's NumPy word features equal scikit-learn's (bot/topics/text_weights.py): hashed rows column for
column, TF-IDF weights value for value; and a scorer's sparse weights score as the dense ones did."""

from __future__ import annotations

from pathlib import Path

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
from bot.topics import scorer_store
from bot.topics.scorer import N_FEATURES, Featurizer, LinearWeights, ScorerSet, TopicScorer, paper_text
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
def test_weights_are_held_in_the_smaller_form_and_score_rows_as_dense_ones(
    nonzero: int, tmp_path: Path
) -> None:
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

    # the model file keeps each form, and reads back what it wrote
    model = ScorerSet(featurizer, {"t": TopicScorer("q", "scored", "", weights, 0.5, 1.0)})
    scorer_store.save(model, tmp_path / "model.npz")
    again = scorer_store.load(tmp_path / "model.npz")
    assert again is not None and again.topics["t"].coef is not None
    assert np.array_equal(again.topics["t"].coef.dot(rows), weights.dot(rows))
    assert (again.topics["t"].coef.columns is None) == (weights.columns is None)


def test_a_model_file_of_format_1_still_reads(tmp_path: Path) -> None:
    """Format 1 kept every topic's non-zero weights only; format 2 may keep them dense. Both read."""
    featurizer = Featurizer.fit([paper_text(p.title, p.abstract) for p in corpus()])
    weights = LinearWeights.of(np.where(np.arange(N_FEATURES) % 1000 == 0, 0.5, 0.0).astype(np.float32))
    assert weights.columns is not None
    scorer_store.FORMAT = 1
    try:
        scorer_store.save(
            ScorerSet(featurizer, {"t": TopicScorer("q", "scored", "", weights)}), tmp_path / "m"
        )
    finally:
        scorer_store.FORMAT = 2
    again = scorer_store.load(tmp_path / "m")
    assert again is not None and again.topics["t"].scored

"""The bot's NumPy word features equal scikit-learn's (bot/topics/text_weights.py): hashed rows column for
column, TF-IDF weights value for value; and a scorer's sparse weights score as the dense ones did."""

from __future__ import annotations

import json
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
    assert held <= min(6 * np.count_nonzero(dense), 2 * N_FEATURES)  # float16 values (+ int32 columns)
    assert (weights.columns is None) == (nonzero == 200_000)
    # scored in float32 over the float16-rounded weights, as a dense float32 product of those would
    rounded = dense.astype(np.float16).astype(np.float32)
    assert weights.dot(rows).dtype == np.float32
    assert np.allclose(weights.dot(rows), np.asarray(rows @ rounded).ravel(), atol=1e-5)
    assert weights.dot(rows)[-1] == 0.0

    # the model file keeps each form, and reads back what it wrote
    model = ScorerSet(featurizer, {"t": TopicScorer("q", "scored", "", weights, 0.5, 1.0)})
    scorer_store.save(model, tmp_path / "model.npz")
    again = scorer_store.load(tmp_path / "model.npz")
    assert again is not None and again.topics["t"].coef is not None
    assert np.array_equal(again.topics["t"].coef.dot(rows), weights.dot(rows))
    assert (again.topics["t"].coef.columns is None) == (weights.columns is None)


@pytest.mark.parametrize("older", [1, 2])
@pytest.mark.parametrize("columns", [2_000, 200_000])
def test_a_float32_model_file_of_an_older_format_still_reads(
    older: int, columns: int, tmp_path: Path
) -> None:
    """Format 1 kept every topic's non-zero float32 weights; format 2 might keep them dense (float32); format 3
    keeps float16. An older file reads, narrowed to float16, and scores as its float32 weights within rounding."""
    texts = [paper_text(p.title, p.abstract) for p in corpus()]
    featurizer = Featurizer.fit(texts)
    rows = featurizer.transform(texts)
    dense = np.zeros(N_FEATURES, dtype=np.float32)
    dense[np.random.default_rng(3).choice(N_FEATURES, columns, replace=False)] = 0.37
    header = {"format": older, "n_features": N_FEATURES, "documents": featurizer.documents}
    header |= {"top_terms": featurizer.top_terms}
    entry = {"key": "t", "query": "q", "status": "scored", "why": "", "intercept": 0.0, "threshold": 1.0}
    entry |= {"positives": 0, "negatives": 0, "estimated_precision": None, "estimated_recall": None}
    entry |= {"held_out_suggestions": [], "weights": "w0"}
    arrays = {"idf": featurizer.idf, "trained_on": np.array([], dtype=str)}
    if older == 2 and columns == 200_000:
        entry["dense"], arrays["w0_dense"] = True, dense
    else:
        arrays["w0_columns"] = np.flatnonzero(dense).astype(np.int32)
        arrays["w0_values"] = dense[np.flatnonzero(dense)]
    header["topics"] = {"0": entry}
    arrays["header"] = np.array(json.dumps(header))
    with (tmp_path / "m").open("wb") as out:
        np.savez(out, **arrays)  # type: ignore[arg-type]
    again = scorer_store.load(tmp_path / "m")
    assert again is not None and again.topics["t"].scored
    read = again.topics["t"].coef
    assert read is not None and read.values.dtype == np.float16
    assert np.allclose(read.dot(rows), np.asarray(rows @ dense).ravel(), rtol=1e-3, atol=1e-4)

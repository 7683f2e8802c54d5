"""A learned scorer beside each topic's query: TF-IDF features and a linear classifier per topic.

A query is exact and explainable but cannot foresee every phrasing. As arxiv-sanity does per tag, each topic
gets a logistic regression over the TF-IDF features of title + abstract, trained on what the topic already
means: its query matches (with the tree rule: a child's matches are its ancestors' too), its labelled
examples (bot/topics/labels, later members' ratings: any extra (text, label, weight) `Example`), its
definition, and a random sample of the other stored papers as negatives. A paper the query misses but the
scorer ranks at or above the topic's threshold is a *suggested* match.

Features. One `Featurizer` is shared by every topic, so a paper's features are computed once: hashed unigrams
and bigrams (as scikit-learn's HashingVectorizer hashes them, bot/topics/text_weights.py: no vocabulary to hold,
2**18 columns), sublinear term
frequency, an IDF fitted on the history, L2-normalised, and only each paper's TOP_TERMS heaviest terms kept
(the common words that remain after IDF say nothing about a topic, and a million papers then fit a small
feature file: bot/topics/scorer_features.py).

Threshold (calibrated per topic, for precision >= TARGET_PRECISION). Every training example gets an
out-of-fold score (k-fold cross-fitting: the model that scores it never saw it). Positives are the query
matches and the labelled positives; negatives are the labelled negatives and the sampled unmatched papers, the
latter weighted by (unmatched papers in the history / sampled), so the estimate holds at the history's base
rate rather than at the sample's. The threshold is the lowest score at which the weighted precision of
"score >= threshold" stays >= the target for every higher threshold too, i.e. the scorer alone, as a
classifier of the topic, is that precise; the suggested matches are the part of it the query missed. The
unmatched sample is counted as negative although it holds the very papers the query misses, so the estimate
is conservative. A topic with fewer than MIN_POSITIVES positives, or whose scorer never reaches the target
precision with enough support, stays query-only and says why (`TopicScorer.status`, `.why`).

This module is what scoring needs (NumPy and SciPy, never scikit-learn); the training and the calibration are
bot/topics/scorer_fit.py's. Both run in child processes (bot/topics/scorer_jobs.py): the bot's own process holds
each topic's status and threshold, and the featurizer, but no weights (bot/topics/scorer_store.py `load`).
Everything here is CPU-bound and synchronous.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.sparse as sp

from bot.topics.text_weights import hashed_counts

N_FEATURES = 2**18
HELD = np.float16  # how a topic's weights are held (see LinearWeights); scores are float32
TOP_TERMS = 96  # features kept per paper
TARGET_PRECISION = 0.90
MIN_POSITIVES = 50  # fewer positives than this: the topic stays query-only (Platt scaling needs them)
MIN_SUPPORT = 5  # weighted positives a threshold must keep above it to be trusted
FOLDS = 5
NEGATIVES_PER_POSITIVE = 10
MIN_NEGATIVES = 2_000
MAX_NEGATIVES = 10_000
MAX_POSITIVES = 3_000  # a broad topic's matches are sampled down to this many
LABEL_WEIGHT = 3.0  # a hand-labelled example counts as much as this many query matches
ALPHA = 1e-4  # L2 regularisation of the logistic regression (fitted by SGD)
MAX_ITER = 15  # epochs at most: hashed TF-IDF rows converge in a few

Status = Literal["scored", "query-only"]


def paper_text(title: str, abstract: str) -> str:
    """What the scorer reads of a paper: the title (twice: it says what the paper is about) and the abstract."""
    return f"{title}\n{title}\n{abstract}"


@dataclass(frozen=True)
class Featurizer:
    """Text -> TF-IDF rows. Stateless but for the IDF, fitted once on the history (`fit`)."""

    idf: np.ndarray  # float32, one weight per hashed column
    documents: int  # how many papers the IDF was fitted on
    top_terms: int = TOP_TERMS

    @classmethod
    def fit(cls, texts: Iterable[str], *, top_terms: int = TOP_TERMS) -> Featurizer:
        """Fit the IDF (smoothed, as scikit-learn's TfidfTransformer) on a sample of the history."""
        df = np.zeros(N_FEATURES, dtype=np.int64)
        documents = 0
        for batch in _batches(texts, 5_000):
            counts = hashed_counts(batch, N_FEATURES)
            df += np.bincount(counts.indices, minlength=N_FEATURES)
            documents += len(batch)
        idf = (np.log((1 + documents) / (1 + df)) + 1).astype(np.float32)
        return cls(idf, documents, top_terms)

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """One L2-normalised row per text, with its `top_terms` heaviest TF-IDF terms."""
        counts = hashed_counts(texts, N_FEATURES)
        counts.data = 1 + np.log(counts.data)  # sublinear tf
        weighted = sp.csr_matrix(counts.multiply(self.idf[np.newaxis, :]), dtype=np.float32)
        return _normalise(_keep_top(weighted, self.top_terms))


def _batches(items: Iterable[str], size: int) -> Iterable[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _keep_top(matrix: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """Each row's k largest entries (all of a row with k or fewer)."""
    lengths = np.diff(matrix.indptr)
    if lengths.max(initial=0) <= k:
        return matrix
    rows_data, rows_indices, indptr = [], [], [0]
    for start, end in zip(matrix.indptr[:-1], matrix.indptr[1:], strict=True):
        data, indices = matrix.data[start:end], matrix.indices[start:end]
        if end - start > k:
            keep = np.argpartition(data, -k)[-k:]
            data, indices = data[keep], indices[keep]
        rows_data.append(data)
        rows_indices.append(indices)
        indptr.append(indptr[-1] + len(data))
    return sp.csr_matrix(
        (np.concatenate(rows_data), np.concatenate(rows_indices), np.array(indptr)), shape=matrix.shape
    )


def _normalise(matrix: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1
    return sp.csr_matrix(sp.diags(1 / norms) @ matrix, dtype=np.float32)


@dataclass(frozen=True)
class Example:
    """One labelled paper for a topic, beside its query matches: from the labelled set, later a member's
    rating. `weight` is how many query matches it counts as."""

    key: str  # the paper's arXiv id (a paper of the history with the same id is then not sampled twice)
    text: str  # paper_text(title, abstract)
    belongs: bool
    weight: float = LABEL_WEIGHT


@dataclass
class TopicInput:
    """What one topic's scorer learns from."""

    key: str
    query: str
    matched: set[str]  # arXiv ids its query (or a descendant's) matches
    examples: list[Example] = field(default_factory=list)
    definition: str | None = None  # the topic's own words, as one positive pseudo-paper


@dataclass(frozen=True)
class LinearWeights:
    """A topic's linear weights over the hashed columns, held in whichever form is smaller: its non-zero
    columns (ascending, int32) with their values, or one value per column (`columns` None). A narrow model
    (few papers, few words) touches a fraction of the 2**18 columns: 6 bytes a weight beats 512 KiB. A model
    trained on thousands of papers touches nearly all of them (SGD with an L2 penalty leaves every column a
    training row holds non-zero: 93% of them on bench_scorer's 100,000 papers), and 2 bytes a column is less.
    Values are held as float16 (half a float32's memory, in the bot and in the stored model) and widened to
    float32 for the product: a weight keeps 11 significant bits, and a row's score moves by far less than the
    gap between the threshold and the nearest labelled paper (tests/topics/test_compact_weights.py)."""

    values: np.ndarray  # float16: per column in `columns`, or per hashed column when `columns` is None
    columns: np.ndarray | None = None

    @classmethod
    def of(cls, dense: np.ndarray) -> LinearWeights:
        columns = np.flatnonzero(dense)
        return cls.sparse(columns, dense[columns])

    @classmethod
    def sparse(cls, columns: np.ndarray, values: np.ndarray) -> LinearWeights:
        """From non-zero columns (ascending) and their values; held densely when that is smaller."""
        if 3 * len(columns) >= N_FEATURES:  # 6 bytes a non-zero weight against 2 bytes a column
            dense = np.zeros(N_FEATURES, dtype=HELD)
            dense[columns] = values
            return cls(dense)
        return cls(np.asarray(values, dtype=HELD), np.asarray(columns, dtype=np.int32))

    def dot(self, features: sp.csr_matrix) -> np.ndarray:
        """features @ weights, one value per row (float32). The weights are widened into a dense float32 column
        for the product (1 MiB, freed after): SciPy's product with a dense vector is the fast one."""
        if self.columns is None:
            dense = self.values.astype(np.float32)
        else:
            dense = np.zeros(N_FEATURES, dtype=np.float32)
            dense[self.columns] = self.values
        return np.asarray(features @ dense, dtype=np.float32).ravel()


@dataclass
class TopicScorer:
    """One topic's scorer: its linear model and threshold, or the reason it is query-only."""

    query: str  # the query it was trained beside: another query means it must be retrained
    status: Status
    why: str  # for a user: why query-only, or what the threshold was calibrated on
    coef: LinearWeights | None = None
    intercept: float = 0.0
    threshold: float = float("inf")  # on the decision function
    positives: int = 0
    negatives: int = 0
    estimated_precision: float | None = None
    estimated_recall: float | None = None  # of the positives, out of fold, at the threshold
    # The sampled negatives it trained on cannot be judged by the final model (it learned them as negatives):
    # these are the ones their out-of-fold score puts at or above the threshold (see ScorerSet.trained_on).
    held_out_suggestions: frozenset[str] = frozenset()

    @property
    def scored(self) -> bool:
        """Whether the topic has a trained scorer (its weights may be held by the scoring process only)."""
        return self.status == "scored"

    def decision(self, features: sp.csr_matrix) -> np.ndarray:
        if self.coef is None:
            return np.full(features.shape[0], -np.inf, dtype=np.float32)
        return self.coef.dot(features) + self.intercept

    def suggests(self, features: sp.csr_matrix) -> np.ndarray:
        """Per row: does the scorer put it at or above the threshold (always False when query-only, or read
        without its weights)."""
        if not self.scored or self.coef is None:
            return np.zeros(features.shape[0], dtype=bool)
        return self.decision(features) >= self.threshold


def query_only(query: str, why: str, positives: int = 0, negatives: int = 0) -> TopicScorer:
    return TopicScorer(query=query, status="query-only", why=why, positives=positives, negatives=negatives)


@dataclass
class ScorerSet:
    """Every topic's scorer with the shared featurizer: what is persisted and loaded at start."""

    featurizer: Featurizer
    topics: dict[str, TopicScorer] = field(default_factory=dict)  # by topic key (see scorer_training)
    trained_on: frozenset[str] = frozenset()  # arXiv ids of the stored papers sampled as negatives

    def status(self, key: str, query: str) -> TopicScorer:
        """The topic's scorer, or a query-only stand-in when it has none or was trained beside another query."""
        scorer = self.topics.get(key)
        if scorer is None:
            return query_only(query, "not trained yet")
        if scorer.query != query:
            return query_only(query, "its query changed since the scorer was trained: it is being retrained")
        return scorer

    def suggestions(self, features: sp.csr_matrix, queries: Mapping[str, str]) -> dict[str, np.ndarray]:
        """Per topic key (of `queries`, key -> current query), which rows its scorer suggests."""
        found: dict[str, np.ndarray] = {}
        for key, query in queries.items():
            scorer = self.status(key, query)
            if scorer.scored:
                found[key] = scorer.suggests(features)
        return found

"""A learned scorer beside each topic's query: TF-IDF features and a linear classifier per topic.

A query is exact and explainable but cannot foresee every phrasing. As arxiv-sanity does per tag, each topic
gets a logistic regression over the TF-IDF features of title + abstract, trained on what the topic already
means: its query matches (with the tree rule: a child's matches are its ancestors' too), its labelled
examples (bot/topics/labels, later members' ratings: any extra (text, label, weight) `Example`), its
definition, and a random sample of the other stored papers as negatives. A paper the query misses but the
scorer ranks at or above the topic's threshold is a *suggested* match.

Features. One `Featurizer` is shared by every topic, so a paper's features are computed once: hashed unigrams
and bigrams (scikit-learn's HashingVectorizer: no vocabulary to hold, 2**18 columns), sublinear term
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

Everything here is CPU-bound and synchronous: callers run it in a worker thread (bot/topics/scorer_training.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, HashingVectorizer
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import StratifiedKFold

N_FEATURES = 2**18
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


def _vectorizer() -> HashingVectorizer:
    return HashingVectorizer(
        n_features=N_FEATURES,
        ngram_range=(1, 2),
        stop_words=sorted(ENGLISH_STOP_WORDS),
        alternate_sign=False,
        norm=None,
        dtype=np.float32,
    )


@dataclass(frozen=True)
class Featurizer:
    """Text -> TF-IDF rows. Stateless but for the IDF, fitted once on the history (`fit`)."""

    idf: np.ndarray  # float32, one weight per hashed column
    documents: int  # how many papers the IDF was fitted on
    top_terms: int = TOP_TERMS

    @classmethod
    def fit(cls, texts: Iterable[str], *, top_terms: int = TOP_TERMS) -> Featurizer:
        """Fit the IDF (smoothed, as scikit-learn's TfidfTransformer) on a sample of the history."""
        vectorizer = _vectorizer()
        df = np.zeros(N_FEATURES, dtype=np.int64)
        documents = 0
        for batch in _batches(texts, 5_000):
            counts = vectorizer.transform(batch).tocsc()
            df += np.diff(counts.indptr)
            documents += len(batch)
        idf = (np.log((1 + documents) / (1 + df)) + 1).astype(np.float32)
        return cls(idf, documents, top_terms)

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """One L2-normalised row per text, with its `top_terms` heaviest TF-IDF terms."""
        counts = _vectorizer().transform(texts)
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
class TopicScorer:
    """One topic's scorer: its linear model and threshold, or the reason it is query-only."""

    query: str  # the query it was trained beside: another query means it must be retrained
    status: Status
    why: str  # for a user: why query-only, or what the threshold was calibrated on
    coef: np.ndarray | None = None  # float32 per feature column
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
        return self.status == "scored" and self.coef is not None

    def decision(self, features: sp.csr_matrix) -> np.ndarray:
        if self.coef is None:
            return np.full(features.shape[0], -np.inf, dtype=np.float32)
        return np.asarray(features @ self.coef).ravel() + self.intercept

    def suggests(self, features: sp.csr_matrix) -> np.ndarray:
        """Per row: does the scorer put it at or above the threshold (always False when query-only)."""
        if not self.scored:
            return np.zeros(features.shape[0], dtype=bool)
        return self.decision(features) >= self.threshold


def query_only(query: str, why: str, positives: int = 0, negatives: int = 0) -> TopicScorer:
    return TopicScorer(query=query, status="query-only", why=why, positives=positives, negatives=negatives)


@dataclass
class TrainingSet:
    """What one topic learns from: rows of features with labels, training weights and calibration weights."""

    features: sp.csr_matrix
    labels: np.ndarray  # bool
    weights: np.ndarray  # in the loss
    calibration: np.ndarray  # in the precision estimate (0: not a calibration example, e.g. the definition)
    sampled_ids: tuple[str, ...] = ()  # the arXiv ids of the sampled rows, which follow the matched ones
    sampled_from: int = 0  # the row where they start

    @classmethod
    def build(
        cls,
        *,
        matched: sp.csr_matrix,
        matched_total: int | None = None,
        sampled: sp.csr_matrix,
        unmatched_total: int,
        sampled_ids: Sequence[str] = (),
        examples: Sequence[Example] = (),
        example_features: sp.csr_matrix | None = None,
        definition: sp.csr_matrix | None = None,
    ) -> TrainingSet:
        """`matched`: the topic's query matches (all, or a sample standing for `matched_total`); `sampled`: a
        random sample of the history the query does not match, standing for `unmatched_total` papers; `examples` with their feature rows;
        `definition`: the topic's own words as one positive pseudo-paper (trained on, never calibrated on)."""
        parts = [matched, sampled]
        labels = [np.ones(matched.shape[0], bool), np.zeros(sampled.shape[0], bool)]
        weights = [np.ones(matched.shape[0]), np.ones(sampled.shape[0])]
        matched_ratio = (matched_total or matched.shape[0]) / max(matched.shape[0], 1)
        ratio = unmatched_total / sampled.shape[0] if sampled.shape[0] else 0.0
        calibration = [
            np.full(matched.shape[0], max(matched_ratio, 1.0)),
            np.full(sampled.shape[0], max(ratio, 1.0)),
        ]
        if examples:
            assert example_features is not None and example_features.shape[0] == len(examples)
            parts.append(example_features)
            labels.append(np.array([e.belongs for e in examples], bool))
            weights.append(np.array([e.weight for e in examples], float))
            calibration.append(np.ones(len(examples)))
        if definition is not None:
            parts.append(definition)
            labels.append(np.ones(definition.shape[0], bool))
            weights.append(np.full(definition.shape[0], LABEL_WEIGHT))
            calibration.append(np.zeros(definition.shape[0]))
        return cls(
            sp.csr_matrix(sp.vstack(parts), dtype=np.float32),
            np.concatenate(labels),
            np.concatenate(weights),
            np.concatenate(calibration),
            tuple(sampled_ids),
            matched.shape[0],
        )

    @property
    def positives(self) -> int:
        return int(self.labels.sum())

    @property
    def negatives(self) -> int:
        return int((~self.labels).sum())


@dataclass(frozen=True)
class _Linear:
    coef: np.ndarray  # float32, one weight per hashed column
    intercept: float

    def decision(self, features: sp.csr_matrix) -> np.ndarray:
        return np.asarray(features @ self.coef).ravel() + self.intercept


def _fit(features: sp.csr_matrix, labels: np.ndarray, weights: np.ndarray) -> _Linear:
    """A logistic regression (fitted by SGD: its time grows with the non-zeros alone, where liblinear stalled for
    seconds on topics without a clear signal), positives as heavy in total as the negatives."""
    positive_weight = weights[labels].sum()
    negative_weight = weights[~labels].sum()
    balance = np.where(labels, negative_weight / max(positive_weight, 1e-9), 1.0)
    model = SGDClassifier(loss="log_loss", alpha=ALPHA, max_iter=MAX_ITER, tol=1e-4, random_state=0)
    with warnings.catch_warnings():  # MAX_ITER is a deliberate cap: more epochs barely move the ranking
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(features, labels, sample_weight=weights * balance)
    return _Linear(model.coef_.ravel().astype(np.float32), float(model.intercept_[0]))


def train_topic(
    query: str,
    data: TrainingSet,
    *,
    target_precision: float = TARGET_PRECISION,
    min_positives: int = MIN_POSITIVES,
    seed: int = 0,
) -> TopicScorer:
    """Train one topic's scorer and calibrate its threshold (see the module docstring)."""
    calibrated = data.calibration > 0
    positives = int((data.labels & calibrated).sum())
    negatives = int((~data.labels & calibrated).sum())
    if positives < min_positives:
        return query_only(
            query,
            f"too few papers to learn from: {positives} matched or labelled, {min_positives} needed",
            positives,
            negatives,
        )
    if negatives < FOLDS:
        return query_only(query, "too few other papers stored to learn what the topic is not", positives)
    scores = _out_of_fold(data, seed)
    threshold, precision, recall = (calibrate_local if CALIBRATION == "local" else calibrate)(
        scores[calibrated], data.labels[calibrated], data.calibration[calibrated], target_precision
    )
    if threshold is None:
        return query_only(
            query,
            f"the scorer does not reach {target_precision:.0%} precision on this topic's papers yet",
            positives,
            negatives,
        )
    model = _fit(data.features, data.labels, data.weights)
    start = data.sampled_from
    sampled_scores = scores[start : start + len(data.sampled_ids)]
    return TopicScorer(
        query=query,
        status="scored",
        why=f"suggests papers above a threshold calibrated for {target_precision:.0%} precision",
        coef=model.coef,
        intercept=model.intercept,
        threshold=threshold,
        positives=positives,
        negatives=negatives,
        estimated_precision=precision,
        estimated_recall=recall,
        held_out_suggestions=frozenset(
            key for key, score in zip(data.sampled_ids, sampled_scores, strict=True) if score >= threshold
        ),
    )


def _out_of_fold(data: TrainingSet, seed: int) -> np.ndarray:
    scores = np.zeros(len(data.labels))
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=seed)
    for train, held in folds.split(np.zeros(len(data.labels)), data.labels):
        model = _fit(data.features[train], data.labels[train], data.weights[train])
        scores[held] = model.decision(data.features[held])
    return scores


def calibrate(
    scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, target: float
) -> tuple[float | None, float | None, float | None]:
    """The lowest threshold whose weighted precision, and that of every higher threshold with enough support,
    is >= target; with that precision and the share of positive weight above it. (None, None, None) when no
    threshold with MIN_SUPPORT positives above it qualifies."""
    order = np.argsort(-scores, kind="stable")
    sorted_scores, sorted_labels, sorted_weights = scores[order], labels[order], weights[order]
    true = np.cumsum(np.where(sorted_labels, sorted_weights, 0.0))
    false = np.cumsum(np.where(sorted_labels, 0.0, sorted_weights))
    precision = true / np.maximum(true + false, 1e-12)
    # A cut can only fall between different scores: look at the last index of each run of equal scores.
    last_of_run = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]
    supported = last_of_run & (true >= MIN_SUPPORT)
    ok = np.where(supported, precision >= target, True)
    # Walking down from the top score, stop at the first supported cut that falls below the target; of the
    # cuts above it, take the one that keeps the most positives, the highest of those (a lower cut would only
    # let negatives in).
    failing = np.flatnonzero(~ok)
    limit = failing[0] if len(failing) else len(scores)
    candidates = np.flatnonzero(supported[:limit])
    if len(candidates) == 0:
        return None, None, None
    best = true[candidates].max()
    cut = candidates[np.flatnonzero(true[candidates] >= best)[0]]
    total_positive = np.where(labels, weights, 0.0).sum()
    return float(sorted_scores[cut]), float(precision[cut]), float(true[cut] / total_positive)


def calibrate_local(
    scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, target: float
) -> tuple[float | None, float | None, float | None]:
    """The score at which a paper's own chance of belonging reaches `target` (Platt scaling: a logistic fit of
    the labels on the scores, weighted), with the weighted precision and recall above it; (None, None, None)
    when no such score keeps MIN_SUPPORT positives above it."""
    platt = LogisticRegression(C=1e4, solver="lbfgs", max_iter=1000)
    platt.fit(scores.reshape(-1, 1), labels, sample_weight=weights)
    slope, offset = float(platt.coef_[0, 0]), float(platt.intercept_[0])
    if slope <= 0:
        return None, None, None
    threshold = (np.log(target / (1 - target)) - offset) / slope
    above = scores >= threshold
    true = weights[above & labels].sum()
    if true < MIN_SUPPORT:
        return None, None, None
    precision = true / max(weights[above].sum(), 1e-12)
    return float(threshold), float(precision), float(true / weights[labels].sum())


CALIBRATION = "local"


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

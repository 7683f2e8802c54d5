"""Fitting a topic's scorer and calibrating its threshold (see bot/topics/scorer.py for the method).

scikit-learn lives here and in the modules that import this one only: they run in the scorer's child process
(bot/topics/scorer_jobs.py), never in the bot's (its memory budget has no room for scikit-learn's ~100 MiB).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import StratifiedKFold

from bot.topics.scorer import (
    ALPHA,
    FOLDS,
    LABEL_WEIGHT,
    MAX_ITER,
    MAX_NEGATIVES,
    MAX_POSITIVES,
    MIN_NEGATIVES,
    MIN_POSITIVES,
    MIN_SUPPORT,
    NEGATIVES_PER_POSITIVE,
    TARGET_PRECISION,
    Example,
    LinearWeights,
    TopicInput,
    TopicScorer,
    query_only,
)
from bot.topics.scorer_features import FeatureFile


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
        coef=LinearWeights.of(model.coef),
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


def train_all(
    features: FeatureFile,
    topics: Sequence[TopicInput],
    *,
    seed: int = 0,
    min_positives: int = MIN_POSITIVES,
    pool: Pool | None = None,
) -> tuple[dict[str, TopicScorer], frozenset[str]]:
    """Train every topic's scorer on the feature rows (CPU-bound: the child process runs it, bot/topics/scorer_jobs.py). One pass reads the
    rows of every topic's matches; one random sample of the rows (`pool`, drawn here when not given, so that
    several calls can share it) serves as every topic's negatives. Returns the scorers by key and the ids of
    that sample."""
    rng = np.random.default_rng(seed)
    if len(features) == 0:
        return {t.key: query_only(t.query, "no stored papers to learn from yet") for t in topics}, frozenset()
    chosen: dict[str, list[str]] = {}
    for topic in topics:
        ids = sorted(topic.matched)
        if len(ids) > MAX_POSITIVES:
            ids = sorted(rng.choice(ids, MAX_POSITIVES, replace=False).tolist())
        chosen[topic.key] = ids
    found_ids, rows = features.rows(sorted(set().union(*chosen.values())) if chosen else [])
    row_of = {key: i for i, key in enumerate(found_ids)}
    pool_ids, pool_rows, stored = pool if pool is not None else draw_pool(features, seed)
    pool_order = rng.permutation(len(pool_ids))  # the sample comes in store order; draw from it at random
    # The labelled papers are shared by many topics (a sub-topic's are its parent's too): featurized once.
    texts = {e.key: e.text for topic in topics for e in topic.examples}
    example_row = {key: i for i, key in enumerate(texts)}
    example_rows = features.featurizer.transform(list(texts.values())) if texts else None
    scorers: dict[str, TopicScorer] = {}
    for topic in topics:
        labelled = {e.key for e in topic.examples}
        positives = [row_of[k] for k in chosen[topic.key] if k in row_of and k not in labelled]
        want = min(MAX_NEGATIVES, max(MIN_NEGATIVES, NEGATIVES_PER_POSITIVE * len(positives)))
        drawn = [
            int(i) for i in pool_order if pool_ids[i] not in topic.matched and pool_ids[i] not in labelled
        ]
        negatives = sorted(drawn[:want])  # a random `want` of them, read in store order
        sampled_down = len(topic.matched) > MAX_POSITIVES
        data = TrainingSet.build(
            matched=rows[positives],
            matched_total=len(topic.matched) if sampled_down else len(positives),
            sampled=pool_rows[negatives],
            sampled_ids=[pool_ids[i] for i in negatives],
            unmatched_total=max(stored - len(topic.matched), len(negatives)),
            examples=topic.examples,
            example_features=(
                example_rows[[example_row[e.key] for e in topic.examples]]
                if example_rows is not None and topic.examples
                else None
            ),
            definition=features.featurizer.transform([topic.definition]) if topic.definition else None,
        )
        scorers[topic.key] = train_topic(topic.query, data, seed=seed, min_positives=min_positives)
    return scorers, frozenset(pool_ids)


Pool = tuple[list[str], sp.csr_matrix, int]  # sampled ids, their rows, how many rows they were drawn from


def draw_pool(features: FeatureFile, seed: int = 0) -> Pool:
    """The random sample of stored papers every topic takes its negatives from."""
    return features.sample(MAX_NEGATIVES, np.random.default_rng(seed + 1))

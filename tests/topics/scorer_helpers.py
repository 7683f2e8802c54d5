"""What the scorer's tests share: a scorer trained on the labelled papers, and a job that kills its process."""

from __future__ import annotations

import os
import signal

import numpy as np

from bot.topics.catalog import find_topic, load_catalog
from bot.topics.relevance import DEFAULT_LABELS, load_labels
from bot.topics.scorer import Featurizer, ScorerSet, paper_text
from bot.topics.scorer_fit import TrainingSet, train_topic

TOPICS = ["RL Post-Training", "LLM Agent Training"]


def trained_on_labels() -> tuple[ScorerSet, dict[str, TrainingSet], np.ndarray]:
    """Each topic trained on its labelled papers (positives as matches, negatives as the sampled history)."""
    catalog = load_catalog()
    labels = load_labels(DEFAULT_LABELS, catalog)
    ids = list(labels.papers)
    texts = [paper_text(labels.papers[i].title, labels.papers[i].abstract) for i in ids]
    featurizer = Featurizer.fit(texts)
    rows = featurizer.transform(texts)
    row_of = {arxiv_id: n for n, arxiv_id in enumerate(ids)}
    scorers, sets = ScorerSet(featurizer), {}
    for name in TOPICS:
        topic = find_topic(catalog, name)
        assert topic is not None
        mine = [label for label in labels.labels if label.slug == topic.slug]
        positives = [row_of[label.arxiv_id] for label in mine if label.belongs]
        negatives = [row_of[label.arxiv_id] for label in mine if not label.belongs]
        data = TrainingSet.build(
            matched=rows[positives],
            sampled=rows[negatives],
            unmatched_total=len(negatives),
            sampled_ids=[ids[n] for n in negatives],
        )
        scorers.topics[topic.slug] = train_topic(topic.query.text, data)
        sets[topic.slug] = data
    return scorers, sets, rows


def die(*args: object, **kwargs: object) -> None:
    """Stands for a job whose process is killed (OOM, a signal): the child ends at once, nothing returned."""
    os.kill(os.getpid(), signal.SIGKILL)

"""Members' ratings measured on labelled real papers (bench/ratings_eval.py): a server whose own query for RL
post-training is broad (every abstract saying reinforcement learning) rates what its channel receives of one
half of the labelled records; on the other half, which neither the scorer nor the ratings saw, its channel then
receives fewer false hits and loses at most 1.5% of the right papers (a right paper whose closest rated neighbour
is a 👎 near miss is withheld: the labelled set holds two, a driving world-action model tuned by RL and an agent
post-trained by SFT and on-policy distillation), withholding no more right papers than wrong ones (training on
half B and reading half A withholds two of each since the fifth relevance round's records; more wrong than right
in the other direction), with 👎 alone or with 👍 too, in both directions of the split."""

from __future__ import annotations

import dataclasses

import pytest

from bench.ratings_eval import RatingFigures, evaluate
from bot.topics.catalog import find_topic, load_catalog
from bot.topics.query import parse_query
from bot.topics.relevance import DEFAULT_LABELS, load_labels

BROAD = 'abs:"reinforcement learning" OR abs:RL'


def _figures(train_half: str, thumbs_up: bool) -> RatingFigures:
    catalog = load_catalog()
    topic = find_topic(catalog, "RL Post-Training")
    assert topic is not None
    catalog = [dataclasses.replace(t, query=parse_query(BROAD)) if t is topic else t for t in catalog]
    [figures] = evaluate(
        catalog,
        load_labels(DEFAULT_LABELS, catalog),
        train_half=train_half,
        filler=1000,
        topics=[topic.slug],
        thumbs_up=thumbs_up,
    )
    return figures


@pytest.mark.parametrize("train_half", ["A", "B"])
@pytest.mark.parametrize("thumbs_up", [False, True], ids=["thumbs-down-only", "thumbs-up-too"])
def test_ratings_on_what_a_channel_read_raise_precision_losing_at_most_one_percent_recall(
    train_half: str, thumbs_up: bool
) -> None:
    figures = _figures(train_half, thumbs_up=thumbs_up)
    assert figures.down >= 10  # the broad query's false hits the members read
    assert (figures.up >= 50) == thumbs_up
    before, after = figures.before, figures.after
    assert before.precision is not None and after.precision is not None
    assert after.precision > before.precision
    assert before.recall is not None and after.recall is not None
    assert before.recall - after.recall <= 0.015
    right = sum(1 for _, belongs in figures.withheld if belongs)
    assert len(figures.withheld) - right >= right

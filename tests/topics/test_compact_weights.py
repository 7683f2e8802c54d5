"""A topic's weights are held as float16 (half the memory of float32, in the bot and in the stored model) and
scored in float32: trained on the labelled papers' real text, the compact model's scores stay within a small
tolerance of the float32 model's and every threshold decision on the labelled set is the same; the model read
back from the database (either back end) scores as the one saved."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bot.store import Store
from bot.topics import scorer_store
from bot.topics.scorer import N_FEATURES
from bot.topics.scorer_fit import _fit
from tests.topics.scorer_helpers import trained_on_labels

TOLERANCE = (
    2e-3  # on the decision function: measured up to 1.4e-3; the nearest paper sits 0.19 from a threshold
)


def test_float16_weights_score_as_float32_ones_and_decide_the_same_on_the_labelled_set() -> None:
    scorers, sets, rows = trained_on_labels()
    for key, scorer in scorers.topics.items():
        assert scorer.scored and scorer.coef is not None, (key, scorer.why)
        assert scorer.coef.values.dtype == np.float16
        held = scorer.coef.values.nbytes + (0 if scorer.coef.columns is None else scorer.coef.columns.nbytes)
        assert held <= 2 * N_FEATURES  # at most half a float32 column
        data = sets[key]
        full = _fit(data.features, data.labels, data.weights)  # the same fit (seeded) kept in float32
        assert full.coef.dtype == np.float32 and full.intercept == scorer.intercept
        reference, compact = full.decision(rows), scorer.decision(rows)
        assert compact.dtype == np.float32
        assert np.max(np.abs(compact - reference)) <= TOLERANCE, key
        assert np.array_equal(compact >= scorer.threshold, reference >= scorer.threshold), key
        assert (reference >= scorer.threshold).any()  # the comparison covers suggestions, not only refusals


@pytest.mark.both_back_ends
async def test_the_compact_model_round_trips_through_the_database(store: Store, tmp_path: Path) -> None:
    scorers, _, rows = trained_on_labels()
    scorer_store.save(scorers, tmp_path / "saved.npz")
    blob = (tmp_path / "saved.npz").read_bytes()
    await store.scorer_models.put(
        blob, format_version=scorer_store.FORMAT, at=datetime(2026, 11, 30, tzinfo=UTC)
    )
    stored = await store.scorer_models.get()
    assert stored is not None and stored.format_version == 3
    scorer_store.write_blob(stored.model, tmp_path / "local" / scorer_store.MODEL_FILE)
    again = scorer_store.load(tmp_path / "local" / scorer_store.MODEL_FILE)
    assert again is not None
    for key, scorer in scorers.topics.items():
        read = again.topics[key]
        assert read.coef is not None and scorer.coef is not None
        assert read.coef.values.dtype == np.float16
        assert np.array_equal(read.decision(rows), scorer.decision(rows))
        assert np.array_equal(read.suggests(rows), scorer.suggests(rows))

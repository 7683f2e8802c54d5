"""The learned scorer: features, threshold calibration, training from a real SQLite store, persistence (a
missing or damaged model or feature file is rebuilt, never fatal), and the labelled evaluation's CLI."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from bot.clock import FakeClock
from bot.store import Store
from bot.topics import scorer_store
from bot.topics.catalog import CatalogTopic, load_catalog
from bot.topics.index import TopicIndex
from bot.topics.query import parse_query
from bot.topics.scorer import MIN_POSITIVES, Example, Featurizer, paper_text
from bot.topics.scorer_features import FeatureFile
from bot.topics.scorer_fit import TrainingSet, calibrate, train_topic
from bot.topics.scorer_training import LearnedScorer, scorer_folder
from bot.topics.scorer_worker import ScorerWorker
from tests.topics.scorer_corpus import CATALOG, ELSEWHERE, FIELD, UNSAID, corpus


def catalog(tmp_path: Path) -> list[CatalogTopic]:
    path = tmp_path / "catalog.toml"
    path.write_text(CATALOG, encoding="utf-8")
    return load_catalog(path)


async def trained_world(
    store: Store, clock: FakeClock, tmp_path: Path
) -> tuple[LearnedScorer, dict[str, int]]:
    topics = catalog(tmp_path)
    await store.papers.upsert(corpus(), seen_at=clock.now())
    await TopicIndex(store, clock).start(topics)
    ids = {row.slug: row.id for row in await store.topics.all()}
    learned = LearnedScorer(store, tmp_path / "db.sqlite3.scorer", catalog=topics, clock=clock)
    await learned.start()
    await learned.train()
    return learned, ids


# ---- features and calibration -----------------------------------------------------------------------------


def test_features_are_normalised_rows_with_at_most_the_top_terms() -> None:
    texts = [paper_text(p.title, p.abstract) for p in corpus()]
    featurizer = Featurizer.fit(texts, top_terms=16)
    rows = featurizer.transform([*texts[:5], ""])
    assert rows.shape[0] == 6
    assert max(np.diff(rows.indptr)) == 16
    norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
    assert np.allclose(norms[:5], 1.0, atol=1e-5)
    assert norms[5] == 0  # an empty text has no features, and no division by zero


def test_the_threshold_keeps_the_weighted_precision_at_the_target() -> None:
    scores = np.array([9, 8, 7, 6, 5, 4, 3, 2, 1, 0], dtype=float)
    labels = np.array([1, 1, 1, 1, 1, 1, 0, 1, 0, 0], dtype=bool)
    threshold, precision, recall = calibrate(scores, labels, np.ones(10), 0.9)
    assert threshold == 4 and precision == 1.0 and recall == pytest.approx(6 / 7)
    # a negative weighted as 100 sampled papers of the history pushes the threshold above it
    weights = np.ones(10)
    weights[6] = 100
    weights[4] = 1
    heavy = np.array([1, 1, 1, 1, 1, 1, 0, 1, 0, 0], dtype=bool)
    scores_heavy = np.array([9, 8, 7, 6, 5, 4, 8.5, 2, 1, 0], dtype=float)
    threshold, _, _ = calibrate(scores_heavy, heavy, weights, 0.9)
    assert threshold is None  # 100 false hits above all but one positive: no threshold is 90% precise


def test_a_topic_with_too_few_matches_stays_query_only_and_says_why() -> None:
    texts = [paper_text(p.title, p.abstract) for p in corpus()]
    featurizer = Featurizer.fit(texts)
    rows = featurizer.transform(texts)
    data = TrainingSet.build(matched=rows[:3], sampled=rows[FIELD:], unmatched_total=300)
    scorer = train_topic('"quantum error correction"', data)
    assert scorer.status == "query-only" and not scorer.scored
    assert f"{MIN_POSITIVES} needed" in scorer.why
    assert not scorer.suggests(rows).any()


def test_labelled_examples_count_as_positives_beside_the_matches() -> None:
    texts = [paper_text(p.title, p.abstract) for p in corpus()]
    featurizer = Featurizer.fit(texts)
    rows = featurizer.transform(texts)
    half = MIN_POSITIVES // 2 + 1
    few = TrainingSet.build(matched=rows[:half], sampled=rows[FIELD:], unmatched_total=300)
    assert not train_topic("q", few).scored
    examples = [Example(f"x{n}", texts[half + n], True) for n in range(half)]
    more = TrainingSet.build(
        matched=rows[:half],
        sampled=rows[FIELD:],
        unmatched_total=300,
        examples=examples,
        example_features=featurizer.transform([e.text for e in examples]),
    )
    assert train_topic("q", more).scored


# ---- training from the store, suggesting, persisting ------------------------------------------------------


async def test_a_trained_topic_suggests_a_paper_its_query_misses(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    learned, ids = await trained_world(store, clock, tmp_path)
    qec = ids["quantum-error-correction"]
    query = '"quantum error correction"'
    assert learned.status(qec, query).scored
    suggested = await learned.suggest([UNSAID, ELSEWHERE], {qec: query})
    assert suggested == {UNSAID.arxiv_id: {qec}}
    # a topic whose query matches nothing has nothing to learn from and says so
    speech = learned.status(
        ids["speech-recognition"], '"speech recognition" AND diarization AND nonexistentword'
    )
    assert speech.status == "query-only" and "too few" in speech.why


async def test_a_changed_query_is_query_only_until_retrained(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    learned, ids = await trained_world(store, clock, tmp_path)
    scorer = learned.status(ids["quantum-error-correction"], '"surface code"')
    assert scorer.status == "query-only" and "query changed" in scorer.why
    assert await learned.suggest([UNSAID], {ids["quantum-error-correction"]: '"surface code"'}) == {}


async def test_the_history_scan_finds_stored_papers_the_query_misses(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    learned, ids = await trained_world(store, clock, tmp_path)
    await store.papers.upsert([UNSAID, ELSEWHERE], seen_at=clock.now())
    assert await learned.sync() == len(corpus()) + 2  # the new papers get their feature rows, once
    found = await learned.scan_history(ids["quantum-error-correction"], '"quantum error correction"')
    assert UNSAID.arxiv_id in found and ELSEWHERE.arxiv_id not in found
    assert await learned.scan_history(ids["speech-recognition"], "x") == []


def test_a_sampled_negative_is_judged_by_a_model_that_never_saw_it() -> None:
    """The unmatched papers sampled as negatives hold the very papers the query misses; the final model learned
    them as negatives, so the history scan takes their out-of-fold verdict."""
    papers = corpus()
    texts = [paper_text(p.title, p.abstract) for p in papers]
    featurizer = Featurizer.fit(texts)
    rows = featurizer.transform(texts)
    # a stored paper of the field that the query missed, here the text of a match under another id
    last = FIELD - 1
    sampled = sp.vstack([rows[FIELD:], rows[last]]).tocsr()
    data = TrainingSet.build(
        matched=rows[:last],
        sampled=sampled,
        unmatched_total=sampled.shape[0],
        sampled_ids=[*(p.arxiv_id for p in papers[FIELD:]), "missed"],
    )
    scorer = train_topic('"quantum error correction"', data)
    assert scorer.scored
    final = scorer.decision(rows[last])[0]
    assert final < scorer.decision(rows[0])[0]  # the final model learned it as a negative
    assert scorer.held_out_suggestions == {"missed"}


async def test_the_model_is_reloaded_at_start(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    learned, ids = await trained_world(store, clock, tmp_path)
    query = '"quantum error correction"'
    again = LearnedScorer(store, learned.folder)
    await again.start()
    assert not again.needs_training
    before = learned.status(ids["quantum-error-correction"], query)
    after = again.status(ids["quantum-error-correction"], query)
    assert after.scored and after.threshold == pytest.approx(before.threshold)
    assert await again.suggest([UNSAID, ELSEWHERE], {ids["quantum-error-correction"]: query}) == {
        UNSAID.arxiv_id: {ids["quantum-error-correction"]}
    }
    assert again.features is not None and len(again.features) == len(corpus())


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other-format", "other-format-inside"])
async def test_a_damaged_stored_model_is_trained_again_never_fatal(
    store: Store, clock: FakeClock, tmp_path: Path, damage: str
) -> None:
    learned, ids = await trained_world(store, clock, tmp_path)
    stored = await store.scorer_models.get()
    assert stored is not None
    blob, version = stored.model, scorer_store.FORMAT
    if damage == "truncated":
        blob = blob[:200]
    elif damage == "garbage":
        blob = b"not a model"
    elif damage == "other-format":
        version += 1
    else:  # the column says this format, the archive's header another
        scorers = learned.scorers
        assert scorers is not None
        scorer_store.FORMAT = version + 1
        try:
            scorer_store.save(scorers, tmp_path / "scratch.npz")
        finally:
            scorer_store.FORMAT = version
        blob = (tmp_path / "scratch.npz").read_bytes()
    await store.scorer_models.put(blob, format_version=version, at=clock.now())
    again = LearnedScorer(store, tmp_path / "another-machine", catalog=learned.catalog)
    await again.start()
    assert again.needs_training
    assert again.status(ids["quantum-error-correction"], '"quantum error correction"').status == "query-only"
    await again.train()
    assert again.status(ids["quantum-error-correction"], '"quantum error correction"').scored
    retrained = await store.scorer_models.get()
    assert retrained is not None and retrained.format_version == scorer_store.FORMAT
    assert scorer_store.load(tmp_path / "another-machine" / scorer_store.MODEL_FILE) is not None


@pytest.mark.both_back_ends
async def test_another_process_elsewhere_reads_the_model_from_the_store(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """Several machines share one model: a process with an empty folder of its own scores at once."""
    _, ids = await trained_world(store, clock, tmp_path)
    query = '"quantum error correction"'
    elsewhere = LearnedScorer(store, tmp_path / "machine-2" / "db.sqlite3.scorer")
    await elsewhere.start()
    assert not elsewhere.needs_training and elsewhere.status(ids["quantum-error-correction"], query).scored
    assert await elsewhere.suggest([UNSAID, ELSEWHERE], {ids["quantum-error-correction"]: query}) == {
        UNSAID.arxiv_id: {ids["quantum-error-correction"]}
    }
    # its feature rows are a local cache, rebuilt from the store at its first sync
    assert elsewhere.features is not None and len(elsewhere.features) == 0
    assert await elsewhere.sync() == len(corpus())


@pytest.mark.both_back_ends
async def test_a_running_process_takes_the_model_another_process_trained(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    """A deployment's processes share one model: one started before any training (or before the latest one)
    takes the newer model at its next check, without a restart; its own model it never reads back."""
    query = '"quantum error correction"'
    gateway = LearnedScorer(store, tmp_path / "machine-2" / "db.sqlite3.scorer", clock=clock)
    await gateway.start()
    assert gateway.needs_training and not await gateway.catch_up()  # nothing trained yet
    poller, ids = await trained_world(store, clock, tmp_path)
    topic = ids["quantum-error-correction"]
    assert await poller.catch_up() is False  # the model it wrote itself
    assert await gateway.catch_up() is True
    assert gateway.status(topic, query).scored
    assert await gateway.suggest([UNSAID, ELSEWHERE], {topic: query}) == {UNSAID.arxiv_id: {topic}}
    assert await gateway.catch_up() is False  # nothing newer since

    clock.advance(86_400)
    await gateway.train()  # e.g. a followed topic's training in the gateway process
    assert await gateway.catch_up() is False
    assert await poller.catch_up() is True
    assert poller.loaded_at == gateway.loaded_at == clock.now().replace(microsecond=0)


async def test_a_damaged_local_copy_of_the_model_is_replaced_by_the_stored_one(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    learned, ids = await trained_world(store, clock, tmp_path)
    assert learned.model_path is not None
    learned.model_path.write_bytes(b"not a model")
    again = LearnedScorer(store, learned.folder)
    await again.start()
    assert again.status(ids["quantum-error-correction"], '"quantum error correction"').scored
    assert scorer_store.load(learned.model_path) is not None


async def test_a_model_file_of_an_earlier_release_moves_into_the_store(
    clock: FakeClock, tmp_path: Path
) -> None:
    """Releases before kept the model beside the database only: it is read, and written into the store."""
    from bot.store import SqliteStore

    async with await SqliteStore.open(tmp_path / "first.sqlite3", clock) as first:
        learned, ids = await trained_world(first, clock, tmp_path)
        assert learned.model_path is not None
        file = learned.model_path.read_bytes()
    async with await SqliteStore.open(tmp_path / "upgraded.sqlite3", clock) as upgraded:
        assert await upgraded.scorer_models.get() is None
        again = LearnedScorer(upgraded, learned.folder)
        await again.start()
        assert again.status(ids["quantum-error-correction"], '"quantum error correction"').scored
        stored = await upgraded.scorer_models.get()
        assert stored is not None and stored.model == file


async def test_damaged_feature_rows_are_rebuilt_from_the_store(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    learned, _ids = await trained_world(store, clock, tmp_path)
    assert learned.folder is not None
    chunk = next((learned.folder / "features").glob("chunk-*.npz"))
    chunk.write_bytes(chunk.read_bytes()[:100])
    again = LearnedScorer(store, learned.folder, catalog=learned.catalog)
    await again.start()
    assert not again.needs_training and again.features is not None and len(again.features) == 0
    await again.train()
    assert len(again.features) == len(corpus())
    reopened = FeatureFile.open(again.features.featurizer, learned.folder / "features")
    assert len(reopened) == len(corpus())


async def test_training_with_no_idle_time_leaves_no_child_process_running(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    await store.papers.upsert(corpus(), seen_at=clock.now())
    await TopicIndex(store, clock).start(catalog(tmp_path))
    learned = LearnedScorer(store, tmp_path / "scorer", catalog=catalog(tmp_path), worker=ScorerWorker(0))
    before = set(multiprocessing.active_children())  # the shared worker's child, kept by other tests
    await learned.train()
    assert learned.scorers is not None and learned.scorers.topics
    assert not learned.worker.running
    assert set(multiprocessing.active_children()) <= before


def test_scorer_folder_sits_beside_the_database(tmp_path: Path) -> None:
    assert scorer_folder(tmp_path / "paperwatch.sqlite3") == tmp_path / "paperwatch.sqlite3.scorer"


async def test_one_topic_is_retrained_alone_and_the_others_are_kept(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    learned, ids = await trained_world(store, clock, tmp_path)
    qec, speech = ids["quantum-error-correction"], ids["speech-recognition"]
    speech_query = '"speech recognition" AND diarization AND nonexistentword'
    assert learned.status(speech, speech_query).status == "query-only"
    await store.topics.change(speech, query="speech OR audio", at=clock.now())
    assert "query changed" in learned.status(speech, "speech OR audio").why
    await TopicIndex(store, clock).match_history(speech, parse_query("speech OR audio"))
    trained = await learned.train([speech])
    assert set(trained) == {speech}
    assert learned.status(speech, "speech OR audio").scored  # the new query's matches taught it
    assert learned.status(qec, '"quantum error correction"').scored  # kept as it was
    reloaded = LearnedScorer(store, learned.folder)
    await reloaded.start()
    assert reloaded.status(speech, "speech OR audio").scored
    assert reloaded.status(qec, '"quantum error correction"').scored

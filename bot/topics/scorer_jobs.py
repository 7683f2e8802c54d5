"""The scorer's CPU work, as jobs for its child processes (bot/topics/scorer_worker.py).

Each job is a module-level function of plain arguments: paths to files the bot wrote (the papers' texts, each
topic's training inputs), the featurizer (its IDF, 1 MiB) and the feature rows' chunk list. What a job makes
goes to files too (feature chunks, the model), so nothing large crosses between the processes (a page of new
papers to score is the exception: its texts go as arguments, a few MB). scikit-learn is imported inside `train`
only, by the child: the bot's process imports this module to name the jobs, and must stay without it; it does
not read the model's weights either (`suggest` does, in the child).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from bot.topics import scorer_store
from bot.topics.scorer import Example, Featurizer, ScorerSet, TopicInput, TopicScorer
from bot.topics.scorer_features import Chunk, FeatureFile

log = logging.getLogger(__name__)

TRAIN_GROUP = 10  # topics trained (and scanned) per pass over the feature rows: bounds the memory it takes
TEXT_BATCH = 5_000  # texts featurized at once


# ---- files the bot writes for a job ---------------------------------------------------------------------------


def write_texts(path: Path, rows: Sequence[tuple[str, str]], *, append: bool = False) -> None:
    """(arXiv id, text) per line, as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as out:
        for arxiv_id, text in rows:
            out.write(json.dumps([arxiv_id, text]) + "\n")


def read_texts(path: Path) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    texts: list[str] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            arxiv_id, text = json.loads(line)
            ids.append(arxiv_id)
            texts.append(text)
    return ids, texts


def write_inputs(path: Path, topics: Sequence[TopicInput], *, append: bool = False) -> None:
    """One topic's training inputs per line, as JSON (its matched ids, labelled examples, definition)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as out:
        for topic in topics:
            examples = [[e.key, e.text, e.belongs, e.weight] for e in topic.examples]
            entry = {"key": topic.key, "query": topic.query, "matched": sorted(topic.matched)}
            out.write(json.dumps({**entry, "examples": examples, "definition": topic.definition}) + "\n")


def read_inputs(path: Path) -> Iterator[TopicInput]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            yield TopicInput(
                entry["key"],
                entry["query"],
                set(entry["matched"]),
                [Example(k, t, bool(b), float(w)) for k, t, b, w in entry["examples"]],
                entry["definition"],
            )


# ---- the jobs -----------------------------------------------------------------------------------------------


def fit_featurizer(texts: Path) -> Featurizer:
    """The featurizer's IDF, fitted on the texts of that file."""
    return Featurizer.fit(read_texts(texts)[1])


def featurize(
    featurizer: Featurizer, folder: Path, chunks: list[Chunk], texts: Path, last_position: int
) -> list[Chunk]:
    """Append the rows of the file's papers (stored up to `last_position`) to the feature folder whose chunks
    are `chunks`; returns the chunks added. The folder's list names them only once their files are written."""
    features = FeatureFile(featurizer, folder)
    features.chunks = list(chunks)
    ids, found = read_texts(texts)
    for start in range(0, len(ids), TEXT_BATCH):  # a batch at a time: the hashing's memory stays bounded
        end = start + TEXT_BATCH
        features.add(ids[start:end], found[start:end], last_position)
    features.flush()
    return features.chunks[len(chunks) :]


def train(
    featurizer: Featurizer, folder: Path, inputs: Path, model: Path, *, keep_others: bool, seed: int = 0
) -> list[str]:
    """Train the scorer of every topic in the inputs file, a group at a time, and save the model at `model`
    (with the other topics of the model already there when `keep_others`). Returns the keys trained."""
    from bot.topics.scorer_fit import draw_pool, train_all  # scikit-learn: the child process only

    features = FeatureFile.open(featurizer, folder)
    pool = draw_pool(features, seed)
    trained: dict[str, TopicScorer] = {}
    group: list[TopicInput] = []
    for topic in read_inputs(inputs):
        group.append(topic)
        if len(group) == TRAIN_GROUP:
            trained.update(train_all(features, group, pool=pool, seed=seed)[0])
            group = []
    if group:
        trained.update(train_all(features, group, pool=pool, seed=seed)[0])
    sampled = frozenset(pool[0])
    scorers = ScorerSet(featurizer, trained, sampled)
    previous = scorer_store.load(model) if keep_others else None
    if previous is not None:
        kept = {key: scorer for key, scorer in previous.topics.items() if key not in trained}
        scorers = ScorerSet(featurizer, {**kept, **trained}, previous.trained_on | sampled)
    scorer_store.save(scorers, model)
    return list(trained)


def scan(featurizer: Featurizer, folder: Path, model: Path, keys: Sequence[str]) -> dict[str, list[str]]:
    """Per topic key (of those scored in the model at `model`), the stored papers its scorer suggests."""
    scorers = scorer_store.load(model)
    if scorers is None:
        return {}
    wanted = {
        key: scorers.topics[key] for key in keys if key in scorers.topics and scorers.topics[key].scored
    }
    if not wanted:
        return {}
    return scan_rows(FeatureFile.open(featurizer, folder), wanted, scorers.trained_on)


def scan_rows(
    features: FeatureFile, scorers: Mapping[str, TopicScorer], trained_on: frozenset[str]
) -> dict[str, list[str]]:
    """Per topic, the stored papers its final model suggests, reading every chunk once; for the papers sampled
    as negatives, their out-of-fold verdict instead (cross-fitting: a model that never saw them)."""
    found: dict[str, list[str]] = {key: [] for key in scorers}
    banned = np.array(sorted(trained_on)) if trained_on else np.array([], dtype=str)
    for ids, matrix in features.each_chunk():
        sampled = np.isin(ids, banned)
        sampled_ids = ids[sampled].tolist()
        for key, scorer in scorers.items():
            flags = scorer.suggests(matrix)
            if sampled_ids:
                flags[sampled] = [k in scorer.held_out_suggestions for k in sampled_ids]
            found[key].extend(ids[flags].tolist())
    return found


# The model a scoring child read last, by (path, modification time, size): a child scores page after page (a
# backfill's) with one read of the model; a new training replaces the file, and the next page reads it again.
_held: tuple[tuple[str, int, int], ScorerSet | None] | None = None


def _model(path: Path) -> ScorerSet | None:
    global _held
    stat = path.stat()  # a missing file raises: the caller's page fails and is scored again
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if _held is None or _held[0] != key:
        _held = None  # the old model goes before the new one is read: one in memory at a time
        _held = (key, scorer_store.load(path))
    return _held[1]


def suggest_here(model: Path, texts: Sequence[str], queries: Mapping[str, str]) -> dict[str, list[int]]:
    """`suggest` in the calling process (the bot's, when its scoring child keeps dying), the weights let go of
    after: the bot's process holds none between pages."""
    global _held
    try:
        return suggest(model, texts, queries)
    finally:
        _held = None


def suggest(model: Path, texts: Sequence[str], queries: Mapping[str, str]) -> dict[str, list[int]]:
    """Per topic key (of `queries`: key -> its current query), the rows of `texts` its scorer puts at or above
    its threshold (only topics the model scores beside that query)."""
    scorers = _model(model)
    if scorers is None:  # unreadable (logged by load): the next training writes another
        return {}
    if not any(scorers.status(key, query).scored for key, query in queries.items()):
        return {}
    features = scorers.featurizer.transform(texts)
    flags = scorers.suggestions(features, queries)
    return {key: np.flatnonzero(rows).tolist() for key, rows in flags.items() if rows.any()}

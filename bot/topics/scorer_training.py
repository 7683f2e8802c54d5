"""Training every topic's scorer from the store, in the background, and using the result.

`LearnedScorer` owns the model file and the feature rows beside the database (`scorer_folder`):

- `start()` reads the model back (a missing or damaged file is not an error: `needs_training` says so and the
  caller trains; until then every topic is query-only);
- `train()` brings the feature rows up to date with the store (each paper featurized once), gathers each
  topic's query matches (the tree rule: a catalog topic learns from its descendants' matches too), its
  labelled examples (bot/topics/labels for catalog topics, plus `extra_examples`, the entry point for members'
  ratings) and its definition, trains in a worker thread, saves, and swaps the new model in;
- `suggest()` scores new papers against every scored topic (CPU-bound: call it in a worker thread);
- `scan_history()` lists the stored papers a topic's scorer suggests (a new topic's history scan).

Nothing here runs scikit-learn or NumPy on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from bot.clock import Clock, SystemClock
from bot.models import Paper, TopicRow
from bot.store import Store
from bot.topic_tree import Hierarchy
from bot.topics import scorer_store
from bot.topics.catalog import CatalogTopic, catalog_hierarchy
from bot.topics.relevance import LabelSet, load_labels
from bot.topics.scorer import (
    LABEL_WEIGHT,
    MAX_NEGATIVES,
    MAX_POSITIVES,
    MIN_NEGATIVES,
    MIN_POSITIVES,
    NEGATIVES_PER_POSITIVE,
    Example,
    Featurizer,
    ScorerSet,
    TopicScorer,
    TrainingSet,
    paper_text,
    query_only,
    train_topic,
)
from bot.topics.scorer_features import FeatureFile
from bot.topics.scorer_ratings import ANCHORS, RatedText, RatingView

log = logging.getLogger(__name__)

TRAIN_GROUP = 10  # topics trained (and scanned) per pass over the feature rows: bounds the memory it takes
IDF_SAMPLE = 50_000  # papers the IDF is fitted on (the first stored): enough for stable weights
TEXT_BATCH = 5_000


def scorer_folder(database_path: Path) -> Path:
    """Where a deployment keeps its scorer: beside its database, named after it."""
    return database_path.with_name(database_path.name + ".scorer")


@dataclass
class TopicInput:
    """What one topic's scorer learns from."""

    key: str
    query: str
    matched: set[str]  # arXiv ids its query (or a descendant's) matches
    examples: list[Example] = field(default_factory=list)
    definition: str | None = None  # the topic's own words, as one positive pseudo-paper


def labelled_examples(
    labels: LabelSet, tree: Hierarchy, slug: str, weight: float = LABEL_WEIGHT
) -> list[Example]:
    """A catalog topic's labelled examples: its own labels and its descendants' positives (the tree rule)."""
    wanted = {slug, *tree.descendants(slug)}
    found: dict[str, bool] = {}
    for label in labels.labels:
        if label.slug == slug:
            found[label.arxiv_id] = found.get(label.arxiv_id, False) or label.belongs
        elif label.slug in wanted and label.belongs:
            found[label.arxiv_id] = True
    return [
        Example(key, paper_text(labels.papers[key].title, labels.papers[key].abstract), belongs, weight)
        for key, belongs in found.items()
    ]


def definition_text(name: str, description: str, definition: str = "") -> str:
    """What belongs, in the topic's own words: the description and the definition before its "Out:" part."""
    inside = definition.split(" Out:", 1)[0]
    return paper_text(name, f"{description} {inside}".strip())


def train_all(
    features: FeatureFile,
    topics: Sequence[TopicInput],
    *,
    seed: int = 0,
    min_positives: int = MIN_POSITIVES,
    pool: Pool | None = None,
) -> tuple[dict[str, TopicScorer], frozenset[str]]:
    """Train every topic's scorer on the feature rows (CPU-bound: run in a worker thread). One pass reads the
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


class LearnedScorer:
    """A deployment's scorers: loaded at start, retrained in the background, asked about new papers."""

    def __init__(
        self,
        store: Store,
        folder: Path | None,
        *,
        catalog: Sequence[CatalogTopic] = (),
        labels: Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.folder = folder  # None: nothing is kept on disk (tests, the demo)
        self.catalog = list(catalog)
        self.labels_folder = labels  # the catalog's labelled examples (bot/topics/labels), read when training
        self.clock = clock or SystemClock()
        self.scorers: ScorerSet | None = None
        self.features: FeatureFile | None = None
        # Extra labelled papers per topic id: the next train() learns from them (members' ratings do not come
        # here: they are one server's, see `views`).
        self.extra_examples: dict[int, list[Example]] = {}
        # (topic id, server id) -> that server's ratings of the topic, rebuilt at each training and at start:
        # its own re-ranking of what the topic posts there (bot/topics/scorer_ratings.py).
        self.views: dict[tuple[int, int], RatingView] = {}
        self._lock = asyncio.Lock()  # one feature sync or training at a time

    @property
    def model_path(self) -> Path | None:
        return None if self.folder is None else self.folder / scorer_store.MODEL_FILE

    @property
    def needs_training(self) -> bool:
        return self.scorers is None

    async def start(self) -> None:
        """Read the model and its feature rows back; without a readable model, every topic stays query-only
        until `train()` has run."""
        path = self.model_path
        if path is None:
            return
        self.scorers = await asyncio.to_thread(scorer_store.load, path)
        if self.scorers is not None and self.folder is not None:
            self.features = await asyncio.to_thread(
                FeatureFile.open, self.scorers.featurizer, self.folder / "features"
            )
        await self.refresh_views()

    def status(self, topic_id: int, query: str) -> TopicScorer:
        """The topic's scorer, or a query-only stand-in saying why it has none."""
        if self.scorers is None:
            return query_only(query, "the scorer has not been trained yet")
        return self.scorers.status(str(topic_id), query)

    # ---- training -------------------------------------------------------------------------------------------

    async def train(self, topic_ids: Collection[int] | None = None) -> dict[int, TopicScorer]:
        """Bring the feature rows up to date, train every topic's scorer (or only those of `topic_ids`, e.g. a
        topic whose query changed, keeping the others) in a worker thread, save the model and use it from now
        on. Returns the scorers trained, by topic id."""
        async with self._lock:
            await self._sync_features()
            assert self.features is not None
            labels = None
            if self.labels_folder is not None and self.catalog:
                labels = await asyncio.to_thread(load_labels, self.labels_folder, self.catalog)
            every = await self.store.topics.all()
            rows = every if topic_ids is None else [row for row in every if row.id in topic_ids]
            pool = await asyncio.to_thread(draw_pool, self.features)
            trained: dict[str, TopicScorer] = {}
            for start in range(0, len(rows), TRAIN_GROUP):  # a group at a time: bounded memory
                inputs = await self._inputs(rows[start : start + TRAIN_GROUP], labels)
                part, _ = await asyncio.to_thread(train_all, self.features, inputs, pool=pool)
                trained.update(part)
            sampled = frozenset(pool[0])
            scorers = ScorerSet(self.features.featurizer, trained, sampled)
            if topic_ids is not None and self.scorers is not None:
                kept = {k: v for k, v in self.scorers.topics.items() if k not in trained}
                scorers = ScorerSet(
                    self.features.featurizer, {**kept, **trained}, self.scorers.trained_on | sampled
                )
            if self.model_path is not None:
                await asyncio.to_thread(scorer_store.save, scorers, self.model_path)
            self.scorers = scorers
            rated = await self.refresh_views()
            scored = sum(1 for s in trained.values() if s.scored)
            log.info(
                "scorer trained: %d of %d topics scored, the rest query-only; %d servers' ratings of %d papers",
                scored,
                len(trained),
                len(self.views),
                rated,
            )
            return {int(key): scorer for key, scorer in trained.items()}

    async def sync(self) -> int:
        """Give the papers stored since the last sync their feature rows (no training); returns how many rows
        there are. Before the first training there is no featurizer: nothing to do."""
        if self.features is None:
            return 0
        async with self._lock:
            await self._sync_features()
        return len(self.features)

    async def _sync_features(self) -> None:
        """Featurize the papers stored since the last sync; with no featurizer yet, fit one first."""
        if self.features is None:
            featurizer = self.scorers.featurizer if self.scorers is not None else await self._fit_featurizer()
            folder = None if self.folder is None else self.folder / "features"
            self.features = (
                FeatureFile(featurizer)
                if folder is None
                else await asyncio.to_thread(FeatureFile.open, featurizer, folder)
            )
        features = self.features
        async for batch in self.store.papers.texts(after=features.last_position, batch=TEXT_BATCH):
            ids = [arxiv_id for _, arxiv_id, _, _ in batch]
            texts = [paper_text(title, abstract) for _, _, title, abstract in batch]
            await asyncio.to_thread(features.add, ids, texts, batch[-1][0])
        await asyncio.to_thread(features.flush)

    async def _fit_featurizer(self) -> Featurizer:
        texts: list[str] = []
        async for batch in self.store.papers.texts(batch=TEXT_BATCH):
            texts.extend(paper_text(title, abstract) for _, _, title, abstract in batch)
            if len(texts) >= IDF_SAMPLE:
                break
        return await asyncio.to_thread(Featurizer.fit, texts[:IDF_SAMPLE])

    async def _inputs(self, rows: Sequence[TopicRow], labels: LabelSet | None = None) -> list[TopicInput]:
        """What each topic learns from. Its stored exact matches already hold its descendants' (the store keeps
        the tree's closure); a catalog topic's labelled examples take its descendants' positives too."""
        by_slug = {t.slug: t for t in self.catalog}
        tree = catalog_hierarchy(self.catalog) if self.catalog else None
        inputs = []
        for row in rows:
            matched = set(await self.store.topics.matched_ids(row.id))
            examples = list(self.extra_examples.get(row.id, ()))
            definition = definition_text(row.name, row.description) if row.description else None
            topic = by_slug.get(row.slug) if row.is_catalog else None
            if topic is not None and tree is not None:
                if labels is not None:
                    examples += labelled_examples(labels, tree, topic.slug)
                definition = definition_text(topic.name, topic.description, topic.definition)
            inputs.append(TopicInput(str(row.id), row.query, matched, examples, definition))
        return inputs

    async def refresh_views(self) -> int:
        """Rebuild every server's rating views from the stored ratings, under the current featurizer (none
        before the first training). Returns how many rated papers they hold."""
        if self.scorers is None:
            self.views = {}
            return 0
        featurizer = self.scorers.featurizer
        views: dict[tuple[int, int], RatingView] = {}
        for guild_id, topic_id in await self.store.ratings.rated_topics():
            texts = []
            for rated in await self.store.ratings.rated(guild_id, topic_id):
                paper = await self.store.papers.get(rated.arxiv_id)
                if paper is not None:
                    texts.append(RatedText(rated.arxiv_id, paper.title, paper.abstract, rated.net))
            rejected = {t.arxiv_id for t in texts if t.net < 0}
            matched = sorted(set(await self.store.topics.matched_ids(topic_id)) - rejected)
            if len(matched) > ANCHORS:  # a fixed sample per topic: the same papers at every rebuild
                matched = sorted(
                    np.random.default_rng(topic_id).choice(matched, ANCHORS, replace=False).tolist()
                )
            kept = []
            for arxiv_id in matched:
                paper = await self.store.papers.get(arxiv_id)
                if paper is not None:
                    kept.append((paper.title, paper.abstract))
            view = await asyncio.to_thread(RatingView.build, featurizer, texts, kept)
            if view is not None:
                views[(topic_id, guild_id)] = view
        self.views = views
        return sum(len(v.ids) for v in views.values())

    # ---- using it -------------------------------------------------------------------------------------------

    def server_verdicts(self, papers: Sequence[Paper]) -> dict[tuple[int, int], tuple[set[str], set[str]]]:
        """(topic id, server id) -> (ids of the papers that server's ratings withhold, ids they lift), for
        every server with rating views. CPU-bound: run it in a worker thread."""
        views, scorers = self.views, self.scorers
        if not views or scorers is None or not papers:
            return {}
        features = scorers.featurizer.transform([paper_text(p.title, p.abstract) for p in papers])
        found: dict[tuple[int, int], tuple[set[str], set[str]]] = {}
        for key, view in views.items():
            withheld, lifted = view.verdicts(features)
            found[key] = (
                {papers[int(i)].arxiv_id for i in np.flatnonzero(withheld)},
                {papers[int(i)].arxiv_id for i in np.flatnonzero(lifted)},
            )
        return found

    def suggest(self, papers: Sequence[Paper], topics: Mapping[int, str]) -> dict[str, set[int]]:
        """arxiv id -> ids of the topics (of `topics`: id -> current query) whose scorer puts the paper at or
        above its threshold. CPU-bound: run it in a worker thread."""
        scorers = self.scorers
        if scorers is None or not papers:
            return {}
        features = scorers.featurizer.transform([paper_text(p.title, p.abstract) for p in papers])
        found: dict[str, set[int]] = {}
        flags = scorers.suggestions(features, {str(k): q for k, q in topics.items()})
        for key, rows in flags.items():
            for i in np.flatnonzero(rows):
                found.setdefault(papers[int(i)].arxiv_id, set()).add(int(key))
        return found

    async def refresh(self, topic_ids: Collection[int] | None = None) -> dict[int, int]:
        """Train (every topic, or those of `topic_ids`), then make each trained topic's stored suggestions what
        its scorer finds in the history now (none for a query-only topic): the daily job, and what follows a
        topic's new query. Returns how many suggestions each trained topic holds."""
        trained = await self.train(topic_ids)
        held: dict[int, int] = {}
        keys = list(trained)
        for start in range(0, len(keys), TRAIN_GROUP):  # a group of topics per pass: bounded memory
            group = {key: trained[key] for key in keys[start : start + TRAIN_GROUP]}
            scorers = {key: scorer for key, scorer in group.items() if scorer.scored}
            found: dict[int, list[str]] = {}
            if scorers and self.features is not None and self.scorers is not None:
                async with self._lock:
                    found = await asyncio.to_thread(
                        _scan_all, self.features, scorers, self.scorers.trained_on
                    )
            for topic_id in group:
                exact = set(await self.store.topics.matched_ids(topic_id)) if found.get(topic_id) else set()
                suggested = [key for key in found.get(topic_id, []) if key not in exact]
                held[topic_id] = await self.store.topics.replace_suggestions(
                    topic_id, suggested, self.clock.now()
                )
        return held

    async def scan_history(self, topic_id: int, query: str) -> list[str]:
        """The stored papers (with feature rows) this topic's scorer suggests, by arXiv id, in store order;
        [] for a query-only topic."""
        scorer = self.status(topic_id, query)
        if not scorer.scored or self.features is None or self.scorers is None:
            return []
        async with self._lock:
            return await asyncio.to_thread(_scan, self.features, scorer, self.scorers.trained_on)


def _scan(features: FeatureFile, scorer: TopicScorer, trained_on: frozenset[str]) -> list[str]:
    return _scan_all(features, {0: scorer}, trained_on)[0]


def _scan_all(
    features: FeatureFile, scorers: Mapping[int, TopicScorer], trained_on: frozenset[str]
) -> dict[int, list[str]]:
    """Per topic, the stored papers its final model suggests, reading every chunk once; for the papers sampled
    as negatives, their out-of-fold verdict instead (cross-fitting: a model that never saw them)."""
    found: dict[int, list[str]] = {key: [] for key in scorers}
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

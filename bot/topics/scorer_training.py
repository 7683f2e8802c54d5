"""Training every topic's scorer from the store, in the background, and using the result.

`LearnedScorer` owns the model (in the store, `Store.scorer_models`, with a local copy) and the feature rows
kept beside the database (`scorer_folder`, a local cache rebuilt from the store):

- `start()` reads the model back (a missing or damaged model is not an error: `needs_training` says so and the
  caller trains; until then every topic is query-only);
- `train()` brings the feature rows up to date with the store (each paper featurized once), gathers each
  topic's query matches (the tree rule: a catalog topic learns from its descendants' matches too), its
  labelled examples (bot/topics/labels for catalog topics, plus `extra_examples`, the entry point for members'
  ratings) and its definition, trains, writes the model into the store, and swaps it in;
- `suggest()` scores new papers against every scored topic (in a child process of its own);
- `scan_history()` lists the stored papers a topic's scorer suggests (a new topic's history scan).

The CPU work of training (fitting the IDF, featurizing the history, fitting and calibrating the models, scanning
the history with them) runs in a child process (bot/topics/scorer_worker.py, the jobs of
bot/topics/scorer_jobs.py): scikit-learn is never imported into the bot's process, and what a training takes
is given back when it ends. This module reads the store and hands the child files; a child that dies leaves
the previous model in use, logged, and the next training starts another. Scoring new papers runs in a child
too (`scoring_worker`, ended when idle): the bot's process reads each topic's status and threshold and the
featurizer, never the weights (25 MiB for 50 topics), so its memory does not grow with the model.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import weakref
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from bot.clock import Clock, SystemClock
from bot.models import Paper, TopicRow
from bot.store import Store
from bot.store.scorer_models import StoredModel
from bot.topic_tree import Hierarchy
from bot.topics import scorer_jobs, scorer_store
from bot.topics.catalog import CatalogTopic, catalog_hierarchy
from bot.topics.relevance import LabelSet, load_labels
from bot.topics.scorer import (
    LABEL_WEIGHT,
    Example,
    Featurizer,
    ScorerSet,
    TopicInput,
    TopicScorer,
    paper_text,
    query_only,
)
from bot.topics.scorer_features import CHUNK_ROWS, FeatureFile, fingerprint
from bot.topics.scorer_jobs import TRAIN_GROUP
from bot.topics.scorer_ratings import ANCHORS, RatedText, RatingView
from bot.topics.scorer_worker import ScorerProcessDied, ScorerWorker, scoring_worker, shared_worker

log = logging.getLogger(__name__)

IDF_SAMPLE = 50_000  # papers the IDF is fitted on (the first stored): enough for stable weights
TEXT_BATCH = 5_000


def scorer_folder(database_path: Path) -> Path:
    """Where a deployment keeps its scorer: beside its database, named after it."""
    return database_path.with_name(database_path.name + ".scorer")


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
        worker: ScorerWorker | None = None,
        scoring: ScorerWorker | None = None,
    ) -> None:
        self.store = store
        self.folder = folder  # None: no folder beside the database (tests, the demo)
        # Where the child process reads and writes (the model's local copy, the feature rows, the jobs' input
        # files): the folder, or a temporary one removed with this object.
        if folder is None:
            self.work = Path(tempfile.mkdtemp(prefix="paperwatch-scorer-"))
            weakref.finalize(self, shutil.rmtree, self.work, True)
        else:
            self.work = folder
        self.worker = worker or shared_worker  # training, featurizing, scanning the history
        self.scoring = scoring or scoring_worker  # scoring new papers
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
        self.loaded_at: datetime | None = None  # when the model in use was trained (the store's time)
        self._lock = asyncio.Lock()  # one feature sync, training or model catch-up at a time

    @property
    def model_path(self) -> Path | None:
        return None if self.folder is None else self.folder / scorer_store.MODEL_FILE

    @property
    def _model(self) -> Path:
        return self.work / scorer_store.MODEL_FILE

    @property
    def _jobs(self) -> Path:
        return self.work / "jobs"

    @property
    def needs_training(self) -> bool:
        return self.scorers is None

    async def start(self) -> None:
        """Read the model back from the store (kept in the local folder for the child process to read), and
        the feature rows kept locally; without a readable model, every topic stays query-only until `train()`
        has run. A model file left beside the database by a release that kept it there moves into the store."""
        stored = await self.store.scorer_models.get()
        if stored is None and not self._model.exists():
            return
        if not await self._load(stored):
            return
        if stored is None:  # the file of an earlier release: every process reads the store's from now on
            await self._publish()
        await self.refresh_views()

    async def catch_up(self) -> bool:
        """Take the model another process of the deployment trained (a poller's daily training, a gateway's
        training of a followed topic) when the store holds a newer one than this process uses: a few
        processes share one database, and each would otherwise score with its own start's model until it
        restarts. Cheap when nothing changed (one row's time read). Returns whether a model was taken."""
        if self._lock.locked():  # this process is training: it writes the newest model itself
            return False
        trained_at = await self.store.scorer_models.trained_at()
        if trained_at is None or trained_at == self.loaded_at:
            return False
        async with self._lock:
            stored = await self.store.scorer_models.get()
            if stored is None or not await self._load(stored):
                return False
            await self.refresh_views()
        log.info("scorer model trained at %s (by another process) taken", stored.trained_at.isoformat())
        return True

    async def _load(self, stored: StoredModel | None) -> bool:
        """Use the stored model (None: the local file an earlier release left); False when it is unreadable or
        of a format this release does not read (logged: training writes a new one)."""
        if stored is not None and stored.format_version not in scorer_store.READABLE:
            log.warning(
                "the stored scorer model is of format %d, not %d: it will be trained again",
                stored.format_version,
                scorer_store.FORMAT,
            )
            return False
        if stored is not None:
            await asyncio.to_thread(scorer_store.write_blob, stored.model, self._model)
        scorers = await asyncio.to_thread(scorer_store.load, self._model, weights=False)
        if scorers is None:
            return False
        if self.features is None or fingerprint(self.features.featurizer) != fingerprint(scorers.featurizer):
            self.features = await asyncio.to_thread(
                FeatureFile.open, scorers.featurizer, self.work / "features"
            )
        self.scorers = scorers
        self.loaded_at = None if stored is None else stored.trained_at
        return True

    async def _publish(self) -> None:
        """Write the local model file into the store: one write, which every process reads at its start (and
        the others running take with `catch_up`)."""
        blob = await asyncio.to_thread(self._model.read_bytes)
        at = self.clock.now()
        await self.store.scorer_models.put(blob, format_version=scorer_store.FORMAT, at=at)
        self.loaded_at = at.replace(microsecond=0)  # as the store keeps it (whole seconds)

    def status(self, topic_id: int, query: str) -> TopicScorer:
        """The topic's scorer, or a query-only stand-in saying why it has none."""
        if self.scorers is None:
            return query_only(query, "the scorer has not been trained yet")
        return self.scorers.status(str(topic_id), query)

    # ---- training -------------------------------------------------------------------------------------------

    async def train(self, topic_ids: Collection[int] | None = None) -> dict[int, TopicScorer]:
        """Bring the feature rows up to date, train every topic's scorer (or only those of `topic_ids`, e.g. a
        topic whose query changed, keeping the others) in the child process, save the model and use it from
        now on. Returns the scorers trained, by topic id: none when the child process died (logged; the
        previous model stays in use and the next training tries again)."""
        async with self._lock, self.worker.session():
            try:
                return await self._train(topic_ids)
            except ScorerProcessDied as exc:
                log.error("%s: the scorer keeps its previous model; the next training tries again", exc)
                return {}

    async def _train(self, topic_ids: Collection[int] | None) -> dict[int, TopicScorer]:
        await self._sync_features()
        assert self.features is not None
        labels = None
        if self.labels_folder is not None and self.catalog:
            labels = await asyncio.to_thread(load_labels, self.labels_folder, self.catalog)
        every = await self.store.topics.all()
        rows = every if topic_ids is None else [row for row in every if row.id in topic_ids]
        inputs = self._jobs / "inputs.jsonl"
        await asyncio.to_thread(scorer_jobs.write_inputs, inputs, [])
        for start in range(0, len(rows), TRAIN_GROUP):  # a group at a time: bounded memory
            group = await self._inputs(rows[start : start + TRAIN_GROUP], labels)
            await asyncio.to_thread(scorer_jobs.write_inputs, inputs, group, append=True)
        del labels
        featurizer = self.features.featurizer
        keep_others = topic_ids is not None and self.scorers is not None
        keys = await self.worker.run(
            scorer_jobs.train, featurizer, self.features.folder, inputs, self._model, keep_others=keep_others
        )
        await asyncio.to_thread(inputs.unlink, missing_ok=True)
        scorers = await asyncio.to_thread(scorer_store.load, self._model, weights=False)
        if scorers is None:  # written a moment ago: unreadable only if the disk failed
            log.error(
                "the scorer model just trained at %s is unreadable: the previous one stays", self._model
            )
            return {}
        await self._publish()
        self.scorers = scorers
        trained = {key: scorers.topics[key] for key in keys}
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
        async with self._lock, self.worker.session():
            try:
                await self._sync_features()
            except ScorerProcessDied as exc:
                log.error("%s: the papers since are featurized at the next sync", exc)
        return len(self.features)

    async def _sync_features(self) -> None:
        """Featurize the papers stored since the last sync (in the child process, a chunk's worth of papers
        per job); with no featurizer yet, fit one first."""
        if self.features is None:
            featurizer = self.scorers.featurizer if self.scorers is not None else await self._fit_featurizer()
            self.features = await asyncio.to_thread(FeatureFile.open, featurizer, self.work / "features")
        features = self.features
        assert features.folder is not None
        # The texts go to the job's file a store batch at a time: the bot never holds a chunk's worth of them.
        texts, written, last = self._jobs / "texts.jsonl", 0, features.last_position
        async for batch in self.store.papers.texts(after=features.last_position, batch=TEXT_BATCH):
            rows = [(arxiv_id, paper_text(title, abstract)) for _, arxiv_id, title, abstract in batch]
            await asyncio.to_thread(scorer_jobs.write_texts, texts, rows, append=written > 0)
            written, last = written + len(rows), batch[-1][0]
            if written >= CHUNK_ROWS:
                await self._featurize(features, texts, last)
                written = 0
        if written:
            await self._featurize(features, texts, last)

    async def _featurize(self, features: FeatureFile, texts: Path, last: int) -> None:
        added = await self.worker.run(
            scorer_jobs.featurize, features.featurizer, features.folder, features.chunks, texts, last
        )
        features.chunks.extend(added)  # the child wrote their files and the folder's list
        await asyncio.to_thread(texts.unlink, missing_ok=True)

    async def _fit_featurizer(self) -> Featurizer:
        texts, written = self._jobs / "idf-sample.jsonl", 0
        async for batch in self.store.papers.texts(batch=TEXT_BATCH):
            rows = [(arxiv_id, paper_text(title, abstract)) for _, arxiv_id, title, abstract in batch]
            rows = rows[: IDF_SAMPLE - written]
            await asyncio.to_thread(scorer_jobs.write_texts, texts, rows, append=written > 0)
            written += len(rows)
            if written >= IDF_SAMPLE:
                break
        if not written:
            await asyncio.to_thread(scorer_jobs.write_texts, texts, [])
        featurizer = await self.worker.run(scorer_jobs.fit_featurizer, texts)
        await asyncio.to_thread(texts.unlink, missing_ok=True)
        return featurizer

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

    async def suggest(self, papers: Sequence[Paper], topics: Mapping[int, str]) -> dict[str, set[int]]:
        """arxiv id -> ids of the topics (of `topics`: id -> current query) whose scorer puts the paper at or
        above its threshold, scored in the scoring child process (in this one, for the page, when the child dies)."""
        scored = {str(k): q for k, q in topics.items() if self.status(k, q).scored}
        if not scored or not papers:
            return {}
        if not await asyncio.to_thread(self._model.exists):  # the local copy removed: the store has it
            stored = await self.store.scorer_models.get()
            if stored is None:
                return {}
            await asyncio.to_thread(scorer_store.write_blob, stored.model, self._model)
        texts = [paper_text(p.title, p.abstract) for p in papers]
        try:
            rows = await self.scoring.run(scorer_jobs.suggest, self._model, texts, scored)
        except ScorerProcessDied as exc:
            # A child that dies on every page (out of memory, a broken install) must not stop the polls: the
            # page is scored here, in a thread, and its weights let go of after.
            log.warning("%s: this page is scored in the bot's own process instead", exc)
            rows = await asyncio.to_thread(scorer_jobs.suggest_here, self._model, texts, scored)
        found: dict[str, set[int]] = {}
        for key, numbers in rows.items():
            for i in numbers:
                found.setdefault(papers[i].arxiv_id, set()).add(int(key))
        return found

    async def refresh(self, topic_ids: Collection[int] | None = None) -> dict[int, int]:
        """Train (every topic, or those of `topic_ids`), then make each trained topic's stored suggestions what
        its scorer finds in the history now (none for a query-only topic): the daily job, and what follows a
        topic's new query. Returns how many suggestions each trained topic holds (none when the child process
        died: the stored suggestions stay as they were)."""
        async with self.worker.session():  # one child process for the training and the scan
            trained = await self.train(topic_ids)
            held: dict[int, int] = {}
            keys = list(trained)
            for start in range(0, len(keys), TRAIN_GROUP):  # a group of topics per pass: bounded memory
                group = {key: trained[key] for key in keys[start : start + TRAIN_GROUP]}
                scored = [str(key) for key, scorer in group.items() if scorer.scored]
                try:
                    found = await self._scan(scored) if scored else {}
                except ScorerProcessDied as exc:
                    log.error("%s: the topics' suggestions are renewed at the next training", exc)
                    return held
                for topic_id in group:
                    exact = (
                        set(await self.store.topics.matched_ids(topic_id)) if found.get(topic_id) else set()
                    )
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
        return (await self._scan([str(topic_id)])).get(topic_id, [])

    async def _scan(self, keys: Sequence[str]) -> dict[int, list[str]]:
        """Per topic id (of those keys scored in the model), the stored papers its scorer suggests: the child
        process reads every feature row once."""
        assert self.features is not None
        async with self._lock:
            found = await self.worker.run(
                scorer_jobs.scan, self.features.featurizer, self.features.folder, self._model, keys
            )
        return {int(key): ids for key, ids in found.items()}

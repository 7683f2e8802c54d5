"""The learned scorer's training runs in a child process: the bot's own process never imports scikit-learn
(nor matplotlib before a chart), and a child that dies mid-training leaves the previous model in use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

from bot.clock import FakeClock
from bot.store import Store
from bot.topics import scorer_jobs
from bot.topics.catalog import load_catalog
from bot.topics.index import TopicIndex
from bot.topics.scorer_training import LearnedScorer
from bot.topics.scorer_worker import ScorerWorker
from tests.topics.scorer_corpus import CATALOG, UNSAID, corpus
from tests.topics.scorer_helpers import die

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")

RUNTIME = """
import asyncio, importlib, json, pkgutil, sys
from pathlib import Path

import bot.app, bot.context, cogs
for module in pkgutil.iter_modules(cogs.__path__):
    importlib.import_module(f"cogs.{module.name}")
from bot.clock import FakeClock
from bot.store import open_store
from bot.topics.catalog import load_catalog
from bot.topics.index import TopicIndex
from bot.topics.scorer_training import LearnedScorer
from tests.topics.scorer_corpus import CATALOG, corpus

async def main(folder: Path) -> None:
    clock = FakeClock()
    store = await open_store(folder / "db.sqlite3", clock)
    (folder / "catalog.toml").write_text(CATALOG, encoding="utf-8")
    topics = load_catalog(folder / "catalog.toml")
    await store.papers.upsert(corpus(), seen_at=clock.now())
    await TopicIndex(store, clock).start(topics)
    learned = LearnedScorer(store, folder / "db.sqlite3.scorer", catalog=topics)
    await learned.train()
    queries = {row.id: row.query for row in await store.topics.all()}
    found = await learned.suggest(corpus()[:60], queries)
    again = LearnedScorer(store, folder / "db.sqlite3.scorer", catalog=topics)
    await again.start()  # a restart reads the model back
    found_again = await again.suggest(corpus()[:60], queries)
    await store.close()
    loaded = sorted({name.split(".")[0] for name in sys.modules})
    print(json.dumps({"suggested": len(found), "again": found_again == found, "modules": loaded}))

asyncio.run(main(Path(sys.argv[1])))
"""


def test_the_bots_process_trains_and_scores_without_scikit_learn(tmp_path: Path) -> None:
    """The bot's runtime (the app, every cog, the context) trains a scorer and scores a page of papers; the
    training's scikit-learn stays in the child process."""
    done = subprocess.run(
        [sys.executable, "-c", RUNTIME, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["suggested"] > 0 and report["again"]
    assert "discord" in report["modules"] and "numpy" in report["modules"]  # it did load the runtime
    assert "sklearn" not in report["modules"]
    assert "matplotlib" not in report["modules"]


class KilledTraining(ScorerWorker):
    """A real child process, killed as soon as it starts training."""

    async def run(self, job: Any, *args: object, **kwargs: object) -> Any:
        return await super().run(die if job is scorer_jobs.train else job, *args, **kwargs)


async def test_a_killed_training_leaves_the_previous_model_and_the_next_one_retries(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    (tmp_path / "catalog.toml").write_text(CATALOG, encoding="utf-8")
    topics = load_catalog(tmp_path / "catalog.toml")
    await store.papers.upsert(corpus(), seen_at=clock.now())
    await TopicIndex(store, clock).start(topics)
    ids = {row.slug: row.id for row in await store.topics.all()}
    qec = ids["quantum-error-correction"]
    learned = LearnedScorer(store, tmp_path / "scorer", catalog=topics, worker=ScorerWorker(0))
    held = await learned.refresh()
    assert set(held) == set(ids.values())
    assert learned.model_path is not None
    model, scorers = learned.model_path.read_bytes(), learned.scorers
    stored = await store.scorer_models.get()
    every = [p.arxiv_id for p in corpus()]
    suggested = await store.topics.suggested_among(list(ids.values()), every)

    learned.worker = KilledTraining(0)
    assert await learned.refresh() == {}  # logged, not raised
    assert learned.scorers is scorers and learned.status(qec, '"quantum error correction"').scored
    assert learned.model_path.read_bytes() == model and await store.scorer_models.get() == stored
    assert await store.topics.suggested_among(list(ids.values()), every) == suggested
    queries = {row.id: row.query for row in await store.topics.all()}
    # scoring goes on, with the previous model
    assert await learned.suggest([UNSAID], queries) == {UNSAID.arxiv_id: {qec}}

    learned.worker = ScorerWorker(0)
    assert await learned.refresh() == held  # the next training starts a new child

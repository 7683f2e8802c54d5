"""The learned scorer at scale, side by side with the query-only path, in one run.

    python bench/bench_scorer.py --papers 100000      # history built once into bench/out/ (shared with
    python bench/bench_scorer.py                      # bench_history.py), 1,000,000 papers by default

Reports: featurizing the history (once per paper, kept beside the database), training every topic's scorer,
retraining after a day's papers, scoring a 2,000-paper page against every topic (in the scoring child process,
its first page with the child's start and a second one, against the model's weights held in this process as the
release before did, and against the query matcher on the same page; with what holding the weights costs in
resident memory), and a new topic's history scan (the FTS5 prefilter + evaluator, then training that topic and
scanning every stored paper's features), with the peak memory of this process (the bot's side) and of the
child process the training runs in (bot/topics/scorer_worker.py). The papers are bench/corpus.py's
synthetic ones (Zipf over invented words): timings are realistic, relevance figures are not (see
`python bench/scorer_eval.py` for those, on labelled real papers).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_history import NOW_SECONDS, OUT, build
from bench.corpus import Corpus
from bot.clock import FakeClock
from bot.topics import scorer_store
from bot.topics.index import TopicIndex
from bot.topics.matcher import Matcher
from bot.topics.query import parse_query
from bot.topics.scorer import paper_text
from bot.topics.scorer_training import LearnedScorer, scorer_folder

PAGE = 2_000


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def rss_mb() -> float:
    """This process's resident memory now (what a training left behind, once it ended)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


def child_peak_mb() -> float:
    """The largest peak of the child processes ended so far (the scorer's training process)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def copy_kept(kept: Path, database: Path) -> None:
    """The kept store (with its -wal file: what is committed but not checkpointed) and scorer folder, copied."""
    for suffix in ("", "-wal"):
        if Path(f"{kept}{suffix}").exists():
            shutil.copyfile(f"{kept}{suffix}", f"{database}{suffix}")
    if scorer_folder(kept).exists():
        shutil.copytree(scorer_folder(kept), scorer_folder(database))


def topic_queries(count: int, seed: int = 3) -> list[str]:
    """Queries as selective as real topics (~0.5-2% of papers): two words of middling frequency. (The corpus
    has no fields to learn: a scorer can only learn the words themselves, which is enough to time it.)"""
    words = Corpus(seed=11).words
    rng = random.Random(seed)
    queries: list[str] = []
    while len(queries) < count:
        text = f"{words[rng.randrange(400, 1500)]} OR {words[rng.randrange(400, 1500)]}"
        if text not in queries:
            queries.append(text)
    return queries


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--topics", type=int, default=50, help="topics followed (the catalog has about 50)")
    parser.add_argument("--fresh", action="store_true", help="drop the kept features and model first")
    parser.add_argument(
        "--copy",
        action="store_true",
        help="work on a copy of the kept store and scorer folder (in a temporary folder), leaving bench/out as is",
    )
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    database = OUT / f"history-{args.papers}.sqlite3"
    copy = None
    # --copy: the kept store is only read (copied); without one, the copy is built in the temporary folder
    if args.copy:
        copy = tempfile.TemporaryDirectory(prefix="bench-scorer-")
        kept, database = database, Path(copy.name) / database.name
        copy_kept(kept, database)
    store = await build(database, args.papers, clock)
    folder = scorer_folder(database)
    if args.fresh:
        shutil.rmtree(folder, ignore_errors=True)
        await store.db.execute("DELETE FROM scorer_models")  # the model every process reads

    index = TopicIndex(store, clock)
    wanted = {f"bench-words-{n}" for n in range(args.topics)}
    for row in await store.topics.all():  # topics of other runs (or of bench_history.py) would be trained too
        if row.slug not in wanted:
            await store.topics.delete(row.id)
    began = time.perf_counter()
    topic_ids: dict[int, str] = {}
    for number, text in enumerate(topic_queries(args.topics)):
        row, changed = await store.topics.save(
            guild_id=0,
            slug=f"bench-words-{number}",
            name=f"Bench {number}",
            description="",
            query=text,
            at=clock.now(),
        )
        index.register(row, parse_query(text))
        if changed:
            await index.match_history(row.id, parse_query(text))
        topic_ids[row.id] = text
    matched = [len(await store.topics.matched_ids(key)) for key in topic_ids]
    print(f"  peak RSS after setting up the store and topics: {peak_mb():,.0f} MB")
    print(
        f"{args.papers:,} papers, {args.topics} topics matching {min(matched):,}-{max(matched):,} papers each "
        f"(set up in {time.perf_counter() - began:.0f} s)"
    )

    learned = LearnedScorer(store, folder)
    began = time.perf_counter()
    await learned.start()
    load_s = time.perf_counter() - began
    first = learned.needs_training
    began = time.perf_counter()
    await learned.train()
    train_s = time.perf_counter() - began
    assert learned.features is not None
    print(
        f"  {'first training (featurizes every paper)' if first else 'training'}: {train_s:.1f} s, "
        f"peak RSS {peak_mb():,.0f} MB, RSS after it {rss_mb():,.0f} MB"
    )

    began = time.perf_counter()
    await learned.refresh()  # the daily job: train every topic, scan the history, store the suggestions
    retrain_s = time.perf_counter() - began

    page = list(Corpus(seed=99).papers(PAGE, start=5_000_000))
    matcher = Matcher([(key, parse_query(text)) for key, text in topic_ids.items()])
    began = time.perf_counter()
    exact = matcher.match_many(page)
    query_page_s = time.perf_counter() - began
    await (
        learned.scoring.close()
    )  # the first page starts the scoring child, as a poll after a quiet time does
    began = time.perf_counter()
    suggested = await learned.suggest(page, topic_ids)
    scorer_page_s = time.perf_counter() - began
    began = time.perf_counter()
    again = await learned.suggest(page, topic_ids)
    warm_page_s = time.perf_counter() - began
    # The release before: the model's weights read into this process, the page scored here.
    assert learned.model_path is not None
    rss_without = rss_mb()
    held = await asyncio.to_thread(scorer_store.load, learned.model_path)
    assert held is not None
    rss_with = rss_mb()
    began = time.perf_counter()
    rows = held.featurizer.transform([paper_text(p.title, p.abstract) for p in page])
    in_process = held.suggestions(rows, {str(k): q for k, q in topic_ids.items()})
    in_process_s = time.perf_counter() - began
    by_paper: dict[str, set[int]] = {}
    for key, flags in in_process.items():
        for i in flags.nonzero()[0]:
            by_paper.setdefault(page[int(i)].arxiv_id, set()).add(int(key))
    same = by_paper == suggested == again
    del held, rows, in_process

    # A new day's papers: featurized and the scorers retrained.
    day = list(Corpus(seed=98).papers(PAGE, start=6_000_000))
    await store.papers.upsert(day, seen_at=clock.now())
    began = time.perf_counter()
    await learned.train()
    day_s = time.perf_counter() - began

    # A new topic: its history matched by the query, then its scorer trained and every paper scanned.
    text = topic_queries(args.topics + 1, seed=4)[-1]
    row, _ = await store.topics.save(
        guild_id=0, slug="bench-new", name="Bench new", description="", query=text, at=clock.now()
    )
    began = time.perf_counter()
    added = await index.match_history(row.id, parse_query(text))
    query_scan_s = time.perf_counter() - began
    began = time.perf_counter()
    await learned.train([row.id])
    new_train_s = time.perf_counter() - began
    began = time.perf_counter()
    found = await learned.scan_history(row.id, text)
    scan_s = time.perf_counter() - began
    exact_ids = set(await store.topics.matched_ids(row.id))
    new_suggested = [key for key in found if key not in exact_ids]
    await store.topics.delete(row.id)
    await store.close()
    await learned.worker.close()  # its peak is counted once it has ended
    await learned.scoring.close()
    if copy is not None:
        copy.cleanup()

    scored = sum(1 for key, text in topic_ids.items() if learned.status(key, text).scored)
    print(f"\nfeature rows kept: {len(learned.features):,}; topics scored: {scored} of {len(topic_ids)}")
    extra = sum(len(ids - exact.get(key, set())) for key, ids in suggested.items())
    print(
        f"page: {sum(len(v) for v in exact.values())} exact (paper, topic) matches, {extra} suggested beside "
        f"them; new topic: {added:,} exact, {len(new_suggested):,} suggested\n"
    )
    print("| work | scorer | query-only path | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| read the model back at start | {load_s:.2f} s | - | - |")
    print(
        f"| {'first training: featurize every paper, train every topic' if first else 'training every topic'} "
        f"| {train_s:.1f} s | - | - |"
    )
    print(
        f"| daily job: retrain every topic, scan the history, store suggestions | {retrain_s:.1f} s | - | - |"
    )
    print(
        f"| retrain after {PAGE:,} new papers (featurize them, train every topic) | {day_s:.1f} s | - | - |"
    )
    print(
        f"| score a {PAGE:,}-paper page against {len(topic_ids)} topics, in the scoring child: the first page "
        f"(the child starts) / the next | {scorer_page_s:.2f} s / {warm_page_s:.2f} s "
        f"| {query_page_s:.2f} s | {scorer_page_s / query_page_s:.1f}x / {warm_page_s / query_page_s:.1f}x |"
    )
    print(
        f"| the same page scored in this process, the weights held here (the release before) | "
        f"{in_process_s:.2f} s | {query_page_s:.2f} s | {in_process_s / query_page_s:.1f}x |"
    )
    print(f"| the same suggestions either way | {'yes' if same else 'NO'} | | |")
    print(
        f"| resident memory of this process: the model as the bot reads it (no weights) / with the weights | "
        f"{rss_without:,.0f} MB / {rss_with:,.0f} MB (+{rss_with - rss_without:,.0f} MB) | | |"
    )
    print(
        f"| new topic: history scan | {new_train_s:.2f} s train + {scan_s:.2f} s scan "
        f"| {query_scan_s:.2f} s (FTS5 + evaluator) | {(new_train_s + scan_s) / query_scan_s:.1f}x |"
    )
    print(f"| resident memory of this process at the end (the model loaded) | {rss_mb():,.0f} MB | | |")
    print(
        f"| peak memory (RSS): this process / the training's child process | {peak_mb():,.0f} MB / {child_peak_mb():,.0f} MB | | |"
    )


if __name__ == "__main__":
    asyncio.run(main())

"""Topic work over a large history: match one new topic over N stored papers, and /momentum's queries.

    python bench/bench_history.py              # 1,000,000 papers (built once into bench/out/, ~5 min)
    python bench/bench_history.py --papers 100000

Reports, side by side in one run: matching a new topic through the FTS5 prefilter against evaluating the query
on every stored paper (a sample, scaled), and momentum's p50/p95 over repeated calls.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpus import CATEGORIES, Corpus
from bot.clock import FakeClock
from bot.services.momentum import MomentumService
from bot.services.topics import TopicService
from bot.store import SqliteStore
from bot.topics.index import TopicIndex
from bot.topics.query import PaperText, parse_query

OUT = Path(__file__).resolve().parent / "out"
NOW_SECONDS = 1_795_000_000  # a fixed "now" (late 2026): the corpus spans the year before it


async def build(path: Path, count: int, clock: FakeClock) -> SqliteStore:
    store = await SqliteStore.open(path, clock)
    have = await store.papers.count()
    if have >= count:
        return store
    corpus = Corpus(seed=11)
    began = time.perf_counter()
    batch = []
    for paper in corpus.papers(count - have, start=have, end=clock.now()):
        batch.append(paper)
        if len(batch) == 5000:
            await store.papers.upsert(batch, seen_at=clock.now())
            batch = []
            done = await store.papers.count()
            print(f"\r  building history: {done:,} / {count:,} papers", end="", flush=True)
    if batch:
        await store.papers.upsert(batch, seen_at=clock.now())
    print(f"\n  built in {time.perf_counter() - began:.0f} s")
    return store


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=50, help="momentum calls to time")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    from datetime import UTC, datetime

    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    store = await build(OUT / f"history-{args.papers}.sqlite3", args.papers, clock)
    words = Corpus(seed=11).words
    # A topic as selective as a real one (~0.3-1% of papers): two mid-frequency words, or a rarer phrase.
    text = (
        f'({words[150]} AND {words[300]}) OR ({words[200]} AND {words[400]}) OR ti:"{words[40]} {words[41]}"'
    )
    query = parse_query(text)
    index = TopicIndex(store, clock)
    service = TopicService(store, index, clock)
    momentum = MomentumService(store, index, clock, CATEGORIES)

    began = time.perf_counter()
    # A new server on every run: one server may keep at most 50 topics of its own.
    row, matched = await service.save_custom(time.time_ns(), "Bench topic", text)
    indexed = time.perf_counter() - began

    # Evaluating the query on every paper, timed on a sample and scaled to the whole history.
    sample_size = min(args.papers, 50_000)
    began = time.perf_counter()
    seen = 0
    async for batch in store.topics.candidates(None):
        for paper in batch:
            query.matches(PaperText(paper))
        seen += len(batch)
        if seen >= sample_size:
            break
    brute = (time.perf_counter() - began) * args.papers / seen

    await store.db.execute("DELETE FROM category_day_counts")  # measure the first call with nothing cached
    began = time.perf_counter()
    await momentum.topic(row)
    cold = (time.perf_counter() - began) * 1000
    timings = []
    for _ in range(args.runs):
        began = time.perf_counter()
        await momentum.topic(row)
        timings.append((time.perf_counter() - began) * 1000)
    timings.sort()
    p95 = timings[int(len(timings) * 0.95) - 1]
    result = await momentum.topic(row)
    await store.close()

    print(f"\nHistory: {args.papers:,} papers; topic `{text}` matches {matched:,}.")
    print(f"Momentum: {result.sentence()}\n")
    print("| work | seconds / ms | against |")
    print("|---|---:|---|")
    print(
        f"| match a new topic over the history (FTS5 prefilter + evaluator) | {indexed:.2f} s | "
        f"evaluating every paper: {brute:.1f} s ({brute / indexed:.0f}x slower) |"
    )
    print(
        f"| /momentum queries (counts, share, 12-week series), {args.runs} calls | p50 {statistics.median(timings):.1f} ms, "
        f"p95 {p95:.1f} ms | first call of the day, counting the days not cached yet: {cold:.0f} ms |"
    )


if __name__ == "__main__":
    asyncio.run(main())

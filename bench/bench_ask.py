"""/ask and /brief (extractive) at scale, side by side with /search, in one run.

    python bench/bench_ask.py                   # 1,000,000 papers (built once into bench/out/, shared with
    python bench/bench_ask.py --papers 100000   # bench_history.py and bench_scorer.py)

The papers are bench/corpus.py's synthetic ones (Zipf over invented words): the timings are realistic, the
answers are not (see `python bench/ask_eval.py` for those, on labelled real papers). Questions mix words of
every frequency, as real ones do ("what" and "model" beside a rare name), with and without a topic; /brief
sums up the same topic's last four weeks against the eight before.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_history import NOW_SECONDS, OUT, build
from bench.corpus import Corpus
from bot.clock import FakeClock
from bot.services.ask import AskService
from bot.services.history import HistoryService
from bot.services.topics import TopicService
from bot.topics.index import TopicIndex
from bot.topics.query import parse_query

GUILD = 4242
TOPIC = "Bench ask topic"


def questions(count: int, seed: int = 5) -> list[str]:
    """Questions of 3-6 content words: one or two common, the rest of middling to rare frequency."""
    words = Corpus(seed=11).words
    rng = random.Random(seed)
    asked = []
    for _ in range(count):
        content = [words[rng.randrange(0, 50)]] + [
            words[rng.randrange(50, 5000)] for _ in range(rng.randint(2, 5))
        ]
        asked.append(f"What is known about {' '.join(content)}?")
    return asked


def searches(count: int, seed: int = 6) -> list[str]:
    words = Corpus(seed=11).words
    rng = random.Random(seed)
    return [f"{words[rng.randrange(50, 5000)]} AND {words[rng.randrange(0, 2000)]}" for _ in range(count)]


async def timed(runs: list[Callable[[], Awaitable[object]]]) -> list[float]:
    timings = []
    for run in runs:
        began = time.perf_counter()
        await run()
        timings.append((time.perf_counter() - began) * 1000)
    return sorted(timings)


def p95(timings: list[float]) -> float:
    return timings[max(0, int(len(timings) * 0.95) - 1)]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=60, help="calls of each command to time")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    store = await build(OUT / f"history-{args.papers}.sqlite3", args.papers, clock)
    index = TopicIndex(store, clock)
    await index.start([])
    topics = TopicService(store, index, clock)
    words = Corpus(seed=11).words
    # As selective as a real topic (~1% of the papers): a topic of a few thousand papers a year.
    text = (
        f'({words[150]} AND {words[300]}) OR ({words[200]} AND {words[400]}) OR ti:"{words[40]} {words[41]}"'
    )
    row = await topics.find(GUILD, TOPIC)
    if row is None or row.query != text:
        row, matched = await topics.save_custom(GUILD, TOPIC, text)
    matched = await store.topics.count_matches(row.id, datetime(1990, 1, 1, tzinfo=UTC), clock.now())
    ask = AskService(store, index, clock)
    history = HistoryService(store, index, None, None)  # type: ignore[arg-type]  # /search needs no arXiv

    asked = questions(args.runs)
    await ask.ask(asked[0])  # warm the page cache as a running bot's would be
    plain = await timed([lambda q=q: ask.ask(q) for q in asked])
    in_topic = await timed(
        [lambda q=q: ask.ask(q, topic=row, guild_id=GUILD) for q in questions(args.runs, seed=7)]
    )
    briefs = await timed([lambda: ask.brief(row, 4, guild_id=GUILD) for _ in range(max(10, args.runs // 3))])
    queries = [parse_query(q) for q in searches(args.runs)]
    search = await timed([lambda q=q: history.search(q) for q in queries])
    sample = await ask.ask(asked[0])
    brief = await ask.brief(row, 4, guild_id=GUILD)
    await store.close()

    print(f"\nHistory: {args.papers:,} papers; topic `{TOPIC}` holds {matched:,}.")
    print(
        f"Sample /ask: {sample.question!r} -> {len(sample.statements)} sentences from {sample.retrieved} papers"
    )
    print(f"Sample /brief: {brief.papers_now} papers in 4 weeks, {len(brief.rising)} rising phrases\n")
    print("| command (extractive) | calls | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|")
    for name, timings in [
        ("/ask, whole history", plain),
        ("/ask within a topic", in_topic),
        ("/brief, 4 weeks against 8", briefs),
        ("/search (two words), for comparison", search),
    ]:
        print(f"| {name} | {len(timings)} | {statistics.median(timings):.0f} | {p95(timings):.0f} |")


if __name__ == "__main__":
    asyncio.run(main())

"""/search of a query FTS5 cannot rank in time at a million papers, through the search service (what /search runs):
how long each search takes, what it answers, and how long a cheap read issued beside four such searches at once
(one member, four commands) waits for a read connection.

    cp bench/out/papers-1000000.sqlite3 /tmp/x/papers.sqlite3          # a COPY: opening migrates it
    python bench/bench_search_budget.py --store /tmp/x/papers.sqlite3 [--checkout PATH] [--runs 3]

`--checkout` imports the bot of another checkout (the code before a change), so both are timed on the same copy,
one after the other; state the load average (`uptime`) beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

QUERIES = ("dodo*", "dodo* OR ionpaquika", "dodo", "ionpaquika")
OUT = (Path(__file__).parent / "out").resolve()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--store", type=Path, required=True, help="a copy of bench/out/papers-1000000.sqlite3"
    )
    parser.add_argument("--checkout", type=Path, default=Path(__file__).parent.parent)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", nargs="*", default=list(QUERIES))
    args = parser.parse_args()
    if args.store.resolve().is_relative_to(OUT):
        sys.exit("give a copy of the store, not bench/out's own file: opening a store migrates it")
    sys.path.insert(0, str(args.checkout.resolve()))
    from bot.clock import SystemClock
    from bot.services.history import HistoryService
    from bot.store import SqliteStore
    from bot.topics.index import TopicIndex
    from bot.topics.query import parse_query

    clock = SystemClock()
    store = await SqliteStore.open(args.store, clock)
    index = TopicIndex(store, clock)
    await index.start([])
    history = HistoryService(store, index, None, None, clock=clock)  # type: ignore[arg-type]  # no arXiv
    print(f"checkout {args.checkout.resolve()}")
    try:
        for text in args.queries:
            query = parse_query(text)
            times, answer = [], ""
            for _ in range(args.runs):
                start = time.perf_counter()
                result = await history.search(query)
                times.append(time.perf_counter() - start)
                kind = "newest first (unranked)" if getattr(result, "unranked", False) else "by relevance"
                answer = f"{len(result.hits)} hits {kind}, complete={result.complete}"
            print(
                f"  /search {text!r}: median {statistics.median(times):.3f} s, max {max(times):.3f} s; {answer}"
            )
        # One member's four searches at once hold every read connection while they run; a cheap read beside them
        # (what another member's command does first) waits for one to come back.
        hostile = parse_query("dodo* OR ionpaquika")
        start = time.perf_counter()
        searches = [asyncio.create_task(history.search(hostile)) for _ in range(4)]
        await asyncio.sleep(0.01)  # the four have their connections
        asked = time.perf_counter()
        await store.papers.count()
        waited = time.perf_counter() - asked
        await asyncio.gather(*searches)
        print(
            f"  a cheap read beside four 'dodo* OR ionpaquika' searches: answered after {waited:.3f} s"
            f" (the four done after {time.perf_counter() - start:.3f} s)"
        )
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())

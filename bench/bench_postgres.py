"""PostgreSQL at a million papers, side by side with SQLite in one run (issue #12's goals):

- ingest: papers/s storing 20,000 new papers (pages of 1,000, as a poll stores them) into the 1M-paper store; on
  PostgreSQL also counting the merge of those papers' entries from the GIN indexes' pending lists into the
  indexes, which autovacuum does in the background (migration 0008);
- /momentum p95 of a topic over 1M papers (goal on PostgreSQL: <= 50 ms);
- a new topic matched over 1M papers (goal: <= 2 s).

The fan-out goal (10,000 servers x 3 follows, a 2,000-paper day into the outbox) is bench/bench_fanout.py's: it
does not read the history, so it needs no 1M-paper store.

    python bench/bench_postgres.py            # 1M papers (the PostgreSQL store is built once, kept in bench/out/)
    python bench/bench_postgres.py --papers 20000   # a quick run
    python bench/bench_postgres.py --postgres-only --cluster /tmp/copy   # a copy of the kept cluster (cp -a)

A run leaves the kept store as it was (the papers it adds are removed), but opening it applies the code's new
migrations: to try code with a migration the kept cluster should not get yet, run it on a copy (--cluster).

The SQLite store is bench/out/papers-<N>.sqlite3 (bench/bench_million.py builds it), copied to a temporary folder
so that nothing in bench/out/ changes. PostgreSQL runs as a local cluster kept in bench/out/postgres/ (Debian's
postgresql package; fsync off, as the tests' server).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_history import NOW_SECONDS  # noqa: E402
from bench.bench_million import p95, papers_only  # noqa: E402
from bench.corpus import Corpus  # noqa: E402
from bot.clock import FakeClock  # noqa: E402
from bot.services.momentum import MomentumService  # noqa: E402
from bot.services.topics import TopicService  # noqa: E402
from bot.store import Store, open_store  # noqa: E402
from bot.store.postgres import PostgresStore  # noqa: E402
from bot.topics.index import TopicIndex  # noqa: E402
from tests.store.postgres_cluster import Cluster, kept_cluster  # noqa: E402

OUT = ROOT / "bench" / "out"
PORT = 54329  # the kept cluster's port (only while this bench runs)
CATEGORIES = ("cs.AI", "cs.CL", "cs.LG")
GOAL_INGEST = 5_000  # papers/s
GOAL_MOMENTUM_MS = 50
GOAL_NEW_TOPIC_S = 2.0
NEW_PAPERS = 20_000
PAGE = 1_000


@dataclass
class Side:
    name: str
    build: float = 0.0  # papers/s building the store (PostgreSQL, when built by this run)
    ingest: float = 0.0  # papers/s into the 1M store
    # papers/s counting the merge of their index entries (PostgreSQL's pending lists)
    ingest_merged: float = 0.0
    new_topic: float = 0.0  # s
    matched: int = 0
    momentum: list[float] = field(default_factory=list)  # ms


async def build_postgres(url: str, size: int, clock: FakeClock) -> float:
    """Fill the kept PostgreSQL store with the same corpus as SQLite's (once); papers/s, or 0 when built."""
    store = await open_store(url, clock)
    try:
        have = await store.papers.count()
        if have >= size:
            return 0.0
        began, batch = time.perf_counter(), []
        for paper in Corpus(seed=11).papers(size - have, start=have, end=clock.now()):
            batch.append(paper)
            if len(batch) == 5000:
                await store.papers.upsert(batch, seen_at=clock.now())
                batch = []
                done = await store.papers.count()
                rate = (done - have) / (time.perf_counter() - began)
                print(
                    f"\r  building PostgreSQL: {done:,} / {size:,} papers, {rate:,.0f}/s", end="", flush=True
                )
        if batch:
            await store.papers.upsert(batch, seen_at=clock.now())
        print()
        return (size - have) / (time.perf_counter() - began)
    finally:
        await store.close()


async def ingest(side: Side, store: Store, size: int, clock: FakeClock) -> None:
    """Papers/s storing NEW_PAPERS new papers a page at a time; they are removed again afterwards. On PostgreSQL,
    the GIN indexes' pending lists start empty, and merging what these papers left in them is timed after."""
    papers = list(Corpus(seed=12).papers(NEW_PAPERS, start=size, end=clock.now()))
    papers = [replace(p, arxiv_id=f"9{p.arxiv_id[1:]}") for p in papers]  # ids the corpus never gives
    db = store.db  # type: ignore[attr-defined]
    postgres = isinstance(store, PostgresStore)
    if postgres:
        await db.fetchall(_MERGE_PENDING)
    began = time.perf_counter()
    for i in range(0, len(papers), PAGE):
        await store.papers.upsert(papers[i : i + PAGE], seen_at=clock.now())
    stored = time.perf_counter() - began
    if postgres:
        await db.fetchall(_MERGE_PENDING)
    merged = time.perf_counter() - began
    side.ingest, side.ingest_merged = len(papers) / stored, len(papers) / merged
    await db.execute("DELETE FROM papers WHERE arxiv_id LIKE '9%'")


# What autovacuum does to the GIN indexes of papers (their pending lists merged into the index), done now.
_MERGE_PENDING = (
    "SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'papers'::regclass AND a.amname = 'gin'"
)


async def topics_and_momentum(side: Side, store: Store, clock: FakeClock, runs: int) -> None:
    words = Corpus(seed=11).words
    text = (
        f'({words[150]} AND {words[300]}) OR ({words[200]} AND {words[400]}) OR ti:"{words[40]} {words[41]}"'
    )
    index = TopicIndex(store, clock)
    service = TopicService(store, index, clock)
    momentum = MomentumService(store, index, clock, CATEGORIES)
    began = time.perf_counter()
    row, side.matched = await service.save_custom(time.time_ns() % 2**40, "Bench topic", text)
    side.new_topic = time.perf_counter() - began
    await momentum.topic(row)  # the first call of the day counts the days not cached yet
    for _ in range(runs):
        began = time.perf_counter()
        await momentum.topic(row)
        side.momentum.append((time.perf_counter() - began) * 1000)
    await store.topics.delete(row.id)  # the kept PostgreSQL store is left as it was (its matches go with it)


def report(sides: list[Side], size: int, runs: int) -> None:
    print(f"\n{size:,} papers.\n")
    print("| | " + " | ".join(s.name for s in sides) + " | goal (PostgreSQL) |")
    print("|---|" + "---:|" * len(sides) + "---|")
    print(
        f"| ingest into the {size:,}-paper store, papers/s | "
        + " | ".join(f"{s.ingest:,.0f}" for s in sides)
        + f" | >= {GOAL_INGEST:,} |"
    )
    print(
        "| the same, counting the merge of their GIN index entries, papers/s | "
        + " | ".join(f"{s.ingest_merged:,.0f}" if s.name == "PostgreSQL" else "" for s in sides)
        + " | |"
    )
    built = [s for s in sides if s.build]
    if built:
        print(
            "| building the store, papers/s | "
            + " | ".join(f"{s.build:,.0f}" if s.build else "" for s in sides)
            + " | |"
        )
    print(
        "| a new topic matched over the history, s | "
        + " | ".join(f"{s.new_topic:.2f} ({s.matched:,} papers)" for s in sides)
        + f" | <= {GOAL_NEW_TOPIC_S:.0f} s |"
    )
    print(
        f"| /momentum, {runs} calls, p50 / p95 ms | "
        + " | ".join(f"{statistics.median(s.momentum):.1f} / {p95(s.momentum):.1f}" for s in sides)
        + f" | p95 <= {GOAL_MOMENTUM_MS} ms |"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=50, help="momentum calls to time")
    parser.add_argument(
        "--postgres-only", action="store_true", help="measure PostgreSQL only (SQLite's column left empty)"
    )
    parser.add_argument(
        "--cluster",
        type=Path,
        default=OUT / "postgres",
        help="the PostgreSQL cluster's folder (a copy, cp -a)",
    )
    args = parser.parse_args()
    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    kept = await papers_only(args.papers)  # SQLite's, built once by bench_million.py
    cluster: Cluster = kept_cluster(args.cluster, PORT)
    try:
        pg_url = cluster.database(f"papers_{args.papers}")
        postgres = Side("PostgreSQL", build=await build_postgres(pg_url, args.papers, clock))
        sqlite = Side("SQLite")
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "papers.sqlite3"
            if not args.postgres_only:
                shutil.copy(kept, copy)
            sides = ((postgres, pg_url),) if args.postgres_only else ((sqlite, str(copy)), (postgres, pg_url))
            for side, where in sides:
                store = await open_store(where if side is postgres else copy, clock)
                try:
                    await ingest(side, store, args.papers, clock)
                    await topics_and_momentum(side, store, clock, args.runs)
                finally:
                    await store.close()
    finally:
        cluster.halt()
    report([postgres] if args.postgres_only else [sqlite, postgres], args.papers, args.runs)


if __name__ == "__main__":
    asyncio.run(main())

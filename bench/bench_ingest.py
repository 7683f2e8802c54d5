"""Ingest N synthetic papers through the store (batched upserts, FTS5 kept in sync) against a bare
`executemany` of the same rows into a table without FTS, side by side in one run; with --postgres, also through
the PostgreSQL store (COPY, tsvector and GIN index kept) on a throwaway local server (Debian's postgresql).

    python bench/bench_ingest.py            # 100,000 papers
    python bench/bench_ingest.py --quick    # 5,000 papers
    python bench/bench_ingest.py --postgres # and the PostgreSQL store
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpus import Corpus
from bot.clock import SystemClock
from bot.models import Paper
from bot.store import open_store
from bot.store.papers import _paper_values

BATCH = 1000  # one API page


async def through_store(path: Path | str, papers: list[Paper]) -> float:
    store = await open_store(path, SystemClock())
    began = time.perf_counter()
    now = SystemClock().now()
    for i in range(0, len(papers), BATCH):
        await store.papers.upsert(papers[i : i + BATCH], seen_at=now)
    elapsed = time.perf_counter() - began
    assert await store.papers.count() == len(papers)
    await store.close()
    return elapsed


async def through_postgres(papers: list[Paper]) -> float:
    from tests.store.postgres_cluster import start_cluster  # a throwaway server, as the tests start

    cluster = start_cluster()
    try:
        return await through_store(cluster.new_database(), papers)
    finally:
        cluster.stop()


def bare_executemany(path: Path, papers: list[Paper]) -> float:
    rows = [_paper_values(p) for p in papers]
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        "CREATE TABLE papers (arxiv_id TEXT, version INT, title TEXT, abstract TEXT, authors TEXT,"
        " authors_json TEXT, primary_category TEXT, categories TEXT, published INT, updated INT, comment TEXT,"
        " journal_ref TEXT, doi TEXT, authors_omitted INT, provisional INT)"
    )
    began = time.perf_counter()
    for i in range(0, len(rows), BATCH):
        with conn:
            conn.executemany(
                f"INSERT INTO papers VALUES ({','.join('?' * len(rows[0]))})", rows[i : i + BATCH]
            )
    elapsed = time.perf_counter() - began
    conn.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="5,000 papers, for a smoke test")
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--postgres", action="store_true", help="also through the PostgreSQL store")
    args = parser.parse_args()
    count = 5_000 if args.quick else args.papers
    papers = list(Corpus(seed=3).papers(count))
    with tempfile.TemporaryDirectory() as tmp:
        bare = bare_executemany(Path(tmp) / "bare.sqlite3", papers)
        store = asyncio.run(through_store(Path(tmp) / "store.sqlite3", papers))
    print("| papers | store + FTS5 (s) | papers/s | bare executemany, no FTS (s) | papers/s | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {count:,} | {store:.2f} | {count / store:,.0f} | {bare:.2f} | {count / bare:,.0f} | "
        f"{store / bare:.1f}x slower |"
    )
    if args.postgres:
        postgres = asyncio.run(through_postgres(papers))
        print(f"\nPostgreSQL store: {count:,} papers in {postgres:.2f} s, {count / postgres:,.0f} papers/s")


if __name__ == "__main__":
    main()

"""One poll's fan-out into the outbox (issue #12's goal: <= 2 s), SQLite and PostgreSQL side by side in one run.

A store with the catalog's 30 topics and `--history` papers (20,000: the fan-out never reads the history, only the
day's papers, the follows and the outbox), `--servers` servers following 3 topics each (a channel per follow), then
one poll's 2,000-paper day stored, matched and queued a page of 1,000 at a time, as the poller does. It reports per
engine the whole intake of the day and, within it, the fan-out proper (`enqueue_for_new_papers`: the outbox rows and
their topics), and checks that both engines queued the same posts.

    python bench/bench_fanout.py                        # this checkout, 10,000 servers
    python bench/bench_fanout.py --before HEAD~3        # and that commit's code, in the same run (before/after)
    python bench/bench_fanout.py --servers 500          # a quick run

PostgreSQL is a throwaway cluster of its own (tests/store/postgres_cluster.py: a temporary folder, fsync off),
stopped at the end; SQLite stores are files in a temporary folder. Each code version runs in a process of its own
(`--code`), one after the other on the same cluster, so the ratios hold under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 2.0
PAGE = 1_000
DAY = 2_000
TOPICS = 30


def _code_path(argv: list[str]) -> Path:
    """The checkout whose `bot` package is measured (`--code`, default this one): read before importing it."""
    for i, arg in enumerate(argv):
        if arg == "--code" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if arg.startswith("--code="):
            return Path(arg.split("=", 1)[1]).resolve()
    return ROOT


async def measure(where: str, servers: int, history: int) -> dict[str, Any]:
    """Build one store at `where` (a file path or a postgresql:// URL) and time its fan-out of one day."""
    import bot.intake
    from bench.bench_history import NOW_SECONDS
    from bench.corpus import Corpus
    from bot.clock import FakeClock
    from bot.intake import Intake
    from bot.store import open_store
    from bot.topics.catalog import CatalogTopic
    from bot.topics.index import TopicIndex
    from bot.topics.query import parse_query

    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    store = await open_store(where, clock)
    try:
        index = TopicIndex(store, clock)
        words = Corpus(seed=11).words
        # 30 topics of the corpus's words (the real catalog's queries name words a synthetic corpus lacks),
        # each matching about ten papers of a 2,000-paper day, as a catalog topic does.
        catalog = [
            CatalogTopic(
                f"bench-{n}", f"Bench {n}", "", parse_query(f"{words[100 + n]} AND {words[300 + n]}")
            )
            for n in range(TOPICS)
        ]
        await index.start(catalog)
        past = clock.now() - timedelta(days=2)
        batch = []
        for paper in Corpus(seed=11).papers(history, start=DAY, end=past):
            batch.append(paper)
            if len(batch) == 5_000:
                await store.papers.upsert(batch, seen_at=clock.now())
                batch = []
        if batch:
            await store.papers.upsert(batch, seen_at=clock.now())
        topics = [t for t in await store.topics.all() if t.guild_id == 0]
        rows = [
            (guild, guild * 10 + k, topics[(guild + k * 7) % len(topics)].id, "each", 8, None, 0, "exact")
            for guild in range(1, servers + 1)
            for k in range(3)
        ]
        db: Any = store.db  # type: ignore[attr-defined]
        await db.executemany(
            "INSERT INTO follows (guild_id, channel_id, topic_id, mode, digest_hour, created_by, created_at, match)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        if where.startswith("postgresql://"):
            await db.execute("ANALYZE")  # as autovacuum would have by the time a poll runs

        fanout: list[float] = []  # s, per page: the fan-out proper, timed inside the intake
        cpu: list[float] = []  # CPU s of this process and, on PostgreSQL, of the server's sessions
        enqueue = bot.intake.enqueue_for_new_papers
        postgres = where.startswith("postgresql://")

        async def used() -> dict[int, float]:
            """CPU seconds so far of this process (its threads: SQLite's too) and of the database's sessions."""
            spent = {0: time.process_time()}
            if postgres:
                for row in await db.fetchall(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                ):
                    spent[row[0]] = server_cpu(row[0])
            return spent

        async def timed(*args: Any, **kwargs: Any) -> int:
            before, began = await used(), time.perf_counter()
            try:
                return await enqueue(*args, **kwargs)
            finally:
                fanout.append(time.perf_counter() - began)
                after = await used()
                cpu.append(sum(v - before.get(k, 0.0) for k, v in after.items()))

        bot.intake.enqueue_for_new_papers = timed  # type: ignore[assignment]
        day = clock.now() - timedelta(days=1)
        papers = list(Corpus(seed=13).papers(DAY, start=0, end=day))
        intake = Intake(store, index, clock)
        began = time.perf_counter()
        try:
            for i in range(0, len(papers), PAGE):  # a poll commits a page at a time
                await intake.store_papers(papers[i : i + PAGE], announce=True)
        finally:
            bot.intake.enqueue_for_new_papers = enqueue
        total = time.perf_counter() - began
        counted = await db.fetchone("SELECT COUNT(*), COUNT(DISTINCT channel_id) FROM deliveries")
        digest = await db.fetchone(
            "SELECT SUM(d.channel_id * 7 + p.pk) FROM deliveries d JOIN papers p ON p.pk = d.paper_pk"
        )
        return {
            "intake": total,
            "fanout": sum(fanout),
            "pages": fanout,
            "cpu": sum(cpu),
            "posts": int(counted[0]),
            "channels": int(counted[1]),
            "check": int(digest[0] or 0),
        }
    finally:
        await store.close()


def server_cpu(pid: int) -> float:
    """CPU seconds a local process has used (user and system), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker(args: argparse.Namespace) -> None:
    """Measure this process's `bot` (from --code) on both engines; print the results as JSON."""
    code = _code_path(sys.argv)
    sys.path[:0] = [str(code), str(ROOT)]  # the measured bot first; bench/ and tests/ from this checkout
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["SQLite"] = asyncio.run(
            measure(str(Path(tmp) / "fanout.sqlite3"), args.servers, args.history)
        )
    results["PostgreSQL"] = asyncio.run(measure(args.postgres, args.servers, args.history))
    print(json.dumps(results))


def run_version(label: str, code: Path, args: argparse.Namespace, url: str) -> dict[str, Any]:
    print(f"measuring {label} ({code}) ...", flush=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--code", str(code)]
    command += ["--servers", str(args.servers), "--history", str(args.history), "--postgres", url]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=code)
    if done.returncode != 0:
        raise SystemExit(f"{label} failed:\n{done.stdout}\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def checkout(commit: str, folder: Path) -> Path:
    """`commit`'s tree extracted into `folder` (no git worktree: nothing shared with the repository)."""
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=20_000, help="papers stored before the day")
    parser.add_argument("--before", metavar="COMMIT", help="also measure this commit's code, in the same run")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--code", help=argparse.SUPPRESS)
    parser.add_argument("--postgres", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    sys.path.insert(0, str(ROOT))
    from tests.store.postgres_cluster import start_cluster

    cluster = start_cluster()
    runs: list[tuple[str, dict[str, Any]]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if args.before:
                before = checkout(args.before, Path(tmp))
                runs.append(
                    (f"before ({args.before})", run_version("before", before, args, cluster.new_database()))
                )
            runs.append(("this checkout", run_version("this checkout", ROOT, args, cluster.new_database())))
    finally:
        cluster.stop()
    load = os.getloadavg()
    print(
        f"\n{args.servers:,} servers x 3 follows, a {DAY:,}-paper day in pages of {PAGE:,}, {args.history:,}"
        f" papers of history; load average {load[0]:.1f} / {load[1]:.1f} (1 / 5 min)\n"
    )
    print(
        "| code | engine | intake of the day, s | of which the fan-out, s (per page) | fan-out CPU, s |"
        " posts queued | goal (fan-out) |"
    )
    print("|---|---|---:|---:|---:|---:|---|")
    for label, result in runs:
        for engine, r in result.items():
            pages = " + ".join(f"{p:.2f}" for p in r["pages"])
            print(
                f"| {label} | {engine} | {r['intake']:.2f} | {r['fanout']:.2f} ({pages}) | {r['cpu']:.2f} |"
                f" {r['posts']:,} | <= {GOAL_S:.0f} s: {'met' if r['fanout'] <= GOAL_S else 'not met'} |"
            )
    checks = {(r["posts"], r["check"]) for _, result in runs for r in result.values()}
    print("\nevery run queued the same posts" if len(checks) == 1 else f"\nRUNS DIFFER: {sorted(checks)}")


if __name__ == "__main__":
    main()

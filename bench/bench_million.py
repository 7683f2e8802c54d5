"""A million papers: the real bot against the loopback Discord and arXiv, on a 10,000-paper store and a
1,000,000-paper one side by side in one run.

    python bench/bench_million.py                      # 10k and 1M (the 1M store is built once, ~10 min)
    python bench/bench_million.py --sizes 10000 --mix 200   # a quick run

For each size, on a fresh copy of a store holding papers only (bench/corpus.py, built once into bench/out/):
ready-to-answer after a first start (every catalog topic's history to match, in the background) and after a
restart; the first response of another member's /topics while one runs the most expensive /search or /follow
(two clients at once); p50/p95 of every command over a mix of 1,000 commands; and the bot's resident memory
after that mix. Prints a markdown table.

Memory is measured on `python -m bot` in a process of its own, with a trained scorer model loaded: the store's
copy gets the model bench/bench_scorer.py trained on its 100,000-paper store (50 scored topics, the
`scorer_models` row of bench/out/history-100000.sqlite3: run `python bench/bench_scorer.py --papers 100000`
once to make it). `--bot-checkout LABEL=PATH` (repeatable) runs that mix against the bot of each checkout in
turn, on the same store, so two releases are compared side by side in one run; `--memory-only` skips the
latency measures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_history import NOW_SECONDS, build  # noqa: E402
from bench.bench_load import Fakes  # noqa: E402
from bench.corpus import Corpus  # noqa: E402
from bot.clock import FakeClock  # noqa: E402
from bot.loopback.arxiv import LoopbackArxiv  # noqa: E402
from bot.loopback.discord import (  # noqa: E402
    ALL_PERMISSIONS,
    LOADING,
    LoopbackDiscord,
)
from bot.loopback.harness import running_paperbot  # noqa: E402

OUT = ROOT / "bench" / "out"
GOAL_P95_MS = 300
GOAL_CONCURRENT_MS = 200
GOAL_READY_S = 3.0
GOAL_RSS_MIB = 250
# The trained scorer model the memory runs load (bench/bench_scorer.py --papers 100000 writes it).
MODEL_SOURCE = OUT / "history-100000.sqlite3"


def rss_mib(pid: int | str = "self", field: str = "VmRSS") -> float:
    """A process's resident memory (VmRSS), or its peak (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory_map(pid: int | str = "self") -> dict[str, float]:
    """A process's resident memory by kind (/proc/<pid>/smaps_rollup), in MiB: anonymous (the heap: Python's
    objects, malloc's arenas, NumPy's arrays) against file-backed (code, mapped files)."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Anonymous", "Pss_File", "Shared_Clean", "Private_Clean"):
            found[name] = int(rest.split()[0]) / 1024
    return found


def install_model(database: Path) -> None:
    """Give the store's copy a trained scorer model: bench_scorer's 50 topics on its 100,000-paper store (the
    bot reads it at start as any deployment's; its topic keys are that store's, so here they score no topic,
    but the model is read and held as a deployment's)."""
    if not MODEL_SOURCE.exists():
        raise SystemExit(
            f"no trained model at {MODEL_SOURCE}: run `python bench/bench_scorer.py --papers 100000`"
        )
    source = sqlite3.connect(f"file:{MODEL_SOURCE}?mode=ro", uri=True)
    try:
        row = source.execute("SELECT name, format, model, trained_at FROM scorer_models").fetchone()
    finally:
        source.close()
    if row is None:
        raise SystemExit(f"{MODEL_SOURCE} holds no model: run `python bench/bench_scorer.py --papers 100000`")
    target = sqlite3.connect(database)
    try:
        with target:
            target.execute("INSERT OR REPLACE INTO scorer_models VALUES (?, ?, ?, ?)", row)
    finally:
        target.close()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


@dataclass
class Result:
    size: int
    ready_first: float = 0.0  # s, a first start: every catalog topic's history to match
    history_s: float = 0.0  # s, that matching, in the background
    follow_history_s: float = 0.0  # s, the broad follows' histories still matching once they all answered
    ready_again: float = 0.0  # s, a restart
    concurrent: dict[str, list[float]] = field(default_factory=dict)  # the other member's /topics, ms
    timings: dict[str, list[float]] = field(default_factory=dict)  # command -> ms to the full answer
    rss_fakes: float = 0.0  # the process before the bot started: Python, the loopback servers
    rss_before: float = 0.0
    rss_after: float = 0.0
    # `python -m bot` as its own process, the loopback servers in this one: the bot's memory alone, per checkout
    bots: dict[str, BotMemory] = field(default_factory=dict)
    search_words: str = ""


@dataclass
class BotMemory:
    start: float = 0.0  # answering, its catalog history matched, the scorer model read
    after: float = 0.0  # after the mix
    peak: float = 0.0
    kinds: dict[str, float] = field(default_factory=dict)  # after the mix, by kind (memory_map)
    load: float = 0.0  # the machine's load average (1 min) when the mix ended
    timings: dict[str, list[float]] = field(default_factory=dict)  # the mix's, command -> ms


def read_only(path: Path) -> sqlite3.Connection:
    """The kept store, for reading: opening it as a store would migrate it (each run migrates its own copy, at
    its first start, as a deployment would)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


async def papers_only(size: int) -> Path:
    """The store of `size` papers and nothing else, built once and kept (bench/out/ is git-ignored)."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"papers-{size}.sqlite3"
    if path.exists():
        kept = read_only(path)
        try:
            if kept.execute("SELECT COUNT(*) FROM papers").fetchone()[0] >= size:
                return path
        finally:
            kept.close()
    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    store = await build(path, size, clock)
    await store.db.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    await store.close()
    return path


class Client:
    """A member typing commands in the loopback Discord (which runs on its own thread and loop)."""

    def __init__(self, fakes: Fakes, discord: LoopbackDiscord, guild: Any, channel: Any, member: Any) -> None:
        self.fakes, self.discord, self.guild, self.channel, self.member = (
            fakes,
            discord,
            guild,
            channel,
            member,
        )

    async def run(self, command: str, **options: Any) -> tuple[float, float]:
        """(ms to the first response, ms to the full answer)."""
        given = [{"name": k, "value": v} for k, v in options.items()]
        began = time.perf_counter()
        record = await self.fakes.run(
            lambda: self.discord.invoke(self.guild, self.channel, self.member, command, given)
        )
        await self.fakes.run(record.wait_response)
        first = time.perf_counter() - began

        def answered(m: dict[str, Any]) -> bool:
            return not m["flags"] & LOADING and not (m.get("content") or "").startswith("Matching history")

        await self.fakes.run(lambda: record.wait_original(answered))
        return first * 1000, (time.perf_counter() - began) * 1000


async def pick_words(store_path: Path, size: int) -> dict[str, str]:
    """Queries of known cost: the most common word, a mid-frequency one, and a custom topic's query that a
    server may follow (at most 25% of the papers, 50,000 candidates)."""
    words = Corpus(seed=11).words
    kept = read_only(store_path)
    try:
        cap = min(50_000, size // 4)
        broad = words[1]
        for rank in (20, 40, 80, 160, 320, 640):
            found = kept.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM papers_fts WHERE papers_fts MATCH ? LIMIT ?)",
                (f'"{words[rank]}"', cap + 1),
            ).fetchone()[0]
            if found <= cap:
                broad = words[rank]
                break
    finally:
        kept.close()
    return {"common": words[0], "mid": words[2000], "broad": broad, "not": f"{words[0]} ANDNOT {words[3]}"}


async def one_size(
    size: int,
    mix: int,
    fakes: Fakes,
    discord: LoopbackDiscord,
    arxiv: LoopbackArxiv,
    checkouts: dict[str, Path],
    memory_only: bool = False,
) -> Result:
    result = Result(size)
    pristine = await papers_only(size)
    words = await pick_words(pristine, size)
    result.search_words = ", ".join(f"{k}: `{v}`" for k, v in words.items())
    guild = await fakes.call(lambda: discord.add_guild(f"Lab {size}"))
    channel = await fakes.call(lambda: discord.add_text_channel(guild, "papers"))
    alice = await fakes.call(lambda: discord.add_member(guild, "alice", permissions=ALL_PERMISSIONS))
    bob = await fakes.call(lambda: discord.add_member(guild, "bob", permissions=ALL_PERMISSIONS))
    a, b = Client(fakes, discord, guild, channel, alice), Client(fakes, discord, guild, channel, bob)
    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    result.rss_fakes = rss_mib()
    # The copy goes to the temporary folder: bench/out holds the pristine stores only.
    with tempfile.TemporaryDirectory(prefix="bench-million-") as tmp:
        folder = Path(tmp)
        shutil.copyfile(pristine, folder / "paperwatch.sqlite3")
        if memory_only:  # the topics the mix asks about, followed before the model is there (no retraining)
            async with running_paperbot(folder, discord, arxiv, clock=clock) as bot:
                assert bot.history_task is not None
                await bot.history_task
                await a.run("follow", topic="RL Post-Training")
                await a.run("follow", topic="Mid", query=words["mid"])
                await bot.ctx.match_history()
        for first_start in () if memory_only else (True, False):
            began = time.perf_counter()
            async with running_paperbot(folder, discord, arxiv, clock=clock) as bot:
                await b.run("topics")
                ready = time.perf_counter() - began
                assert bot.history_task is not None
                await bot.history_task
                if first_start:
                    result.ready_first, result.history_s = ready, time.perf_counter() - began
                    continue
                result.ready_again = ready
                await a.run("follow", topic="RL Post-Training")
                await a.run("follow", topic="Mid", query=words["mid"])
                await concurrency(result, a, b, words)
                began = time.perf_counter()  # the broad follows' histories, matched in the background
                await bot.ctx.match_history()  # drained before the mix, which times commands alone
                result.follow_history_s = time.perf_counter() - began
                result.rss_before = rss_mib()
                await command_mix(result, a, words, mix, size)
                result.rss_after = rss_mib()
        install_model(folder / "paperwatch.sqlite3")
        for label, checkout in checkouts.items():
            result.bots[label] = await bot_process(
                result.size, checkout, folder, mix, a, words, discord, arxiv
            )
    return result


async def bot_process(
    size: int,
    checkout: Path,
    folder: Path,
    mix: int,
    a: Client,
    words: dict[str, str],
    discord: LoopbackDiscord,
    arxiv: LoopbackArxiv,
) -> BotMemory:
    """The same mix against `python -m bot` of `checkout` in a process of its own (on the store the runs above
    left, with a trained scorer model), whose resident memory is then the bot's alone."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.endswith(("_PROXY", "_proxy"))},
        "DISCORD_TOKEN": discord.token,
        "DISCORD_API_BASE": discord.api_base,
        "DISCORD_GATEWAY_URL": discord.gateway_url,
        "DATABASE_PATH": str(folder / "paperwatch.sqlite3"),
        "ARXIV_API_URL": arxiv.url,
        "ARXIV_RSS_URL": arxiv.rss_url,
        "ARXIV_MIN_INTERVAL_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(checkout),  # that checkout's bot, wherever the process starts
    }
    identified = await a.fakes.call(lambda: discord.identify_count)
    synced = await a.fakes.call(lambda: len(discord.requests_to("PUT", "/applications/*/commands")))
    memory = BotMemory()
    with (folder / f"bot-{size}.log").open("ab") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", env=env, cwd=folder, stdout=log, stderr=asyncio.subprocess.STDOUT
        )
    try:
        # Connected (a new session: what was sent to the last one is not replayed) and its commands synced.
        await a.fakes.run(lambda: discord.wait_for(lambda: discord.identify_count > identified))
        await a.fakes.run(
            lambda: discord.wait_for(
                lambda: len(discord.requests_to("PUT", "/applications/*/commands")) > synced
            )
        )
        await a.run("topics")
        await a.run("status")
        memory.start = rss_mib(proc.pid)
        timings = Result(size)
        await command_mix(timings, a, words, mix, size)
        memory.timings = timings.timings
        memory.after = rss_mib(proc.pid)
        memory.peak = rss_mib(proc.pid, "VmHWM")
        memory.kinds = memory_map(proc.pid)
        memory.load = os.getloadavg()[0]
    finally:
        proc.terminate()
        await proc.wait()
    if proc.returncode not in (0, -15):
        raise SystemExit(f"the bot process ended with {proc.returncode}: see {folder / f'bot-{size}.log'}")
    return memory


async def concurrency(result: Result, a: Client, b: Client, words: dict[str, str]) -> None:
    """The other member's /topics while one runs the most expensive /search, or a /follow of a broad query."""
    heavy: list[tuple[str, Callable[[int], dict[str, Any]]]] = [
        ("search", lambda i: {"query": words["common"]}),
        ("follow", lambda i: {"topic": f"Broad {i}", "query": words["broad"]}),
    ]
    for name, options in heavy:
        firsts: list[float] = []
        for i in range(5):
            expensive = asyncio.create_task(a.run(name, **options(i)))
            await asyncio.sleep(0.005)  # it has started
            first, _ = await b.run("topics")
            firsts.append(first)
            own_first, full = await expensive
            label = f"/{name} {'(common word)' if name == 'search' else '(broad query)'}"
            result.timings.setdefault(label, []).append(full)
            result.timings.setdefault(f"{label}: first response", []).append(own_first)
        result.concurrent[name] = firsts


async def command_mix(result: Result, a: Client, words: dict[str, str], count: int, size: int) -> None:
    rng = random.Random(5)
    vocabulary = Corpus(seed=11).words
    paper_id = f"{2000 + (size // 2) // 100000:04d}.{(size // 2) % 100000:05d}"
    mix: list[tuple[str, str, Callable[[], dict[str, Any]]]] = [
        ("/topics", "topics", dict),
        ("/status", "status", dict),
        ("/latest", "latest", lambda: {"topic": "Mid", "count": 10}),
        ("/momentum topic", "momentum", lambda: {"topic": "Mid"}),
        ("/momentum (ranking)", "momentum", dict),
        ("/paper", "paper", lambda: {"id": paper_id}),
        ("/search (common word)", "search", lambda: {"query": words["common"]}),
        ("/search (a random word)", "search", lambda: {"query": rng.choice(vocabulary[100:5000])}),
        ("/search cat:cs.LG", "search", lambda: {"query": "cat:cs.LG"}),
        ("/search NOT", "search", lambda: {"query": words["not"]}),
        ("/follow (followed topic)", "follow", lambda: {"topic": "Mid"}),
    ]
    for i in range(count):
        label, command, options = mix[i % len(mix)]
        _, full = await a.run(command, **options())
        result.timings.setdefault(label, []).append(full)


def report(results: list[Result], args: argparse.Namespace) -> None:
    if args.memory_only:
        memory_report(results, args)
        return
    sizes = [f"{r.size:,} papers" for r in results]
    print(f"\n`python bench/bench_million.py --sizes {' '.join(map(str, args.sizes))} --mix {args.mix}`\n")
    print(f"| measure | {' | '.join(sizes)} | goal |")
    print(f"|---|{'---:|' * len(results)}---|")

    def row(label: str, values: list[str], goal: str) -> None:
        print(f"| {label} | {' | '.join(values)} | {goal} |")

    row(
        "ready to answer, first start (catalog history to match)",
        [f"{r.ready_first:.2f} s" for r in results],
        f"<= {GOAL_READY_S:.0f} s",
    )
    row("catalog history matched, in the background, after", [f"{r.history_s:.1f} s" for r in results], "-")
    row("ready to answer, restart", [f"{r.ready_again:.2f} s" for r in results], f"<= {GOAL_READY_S:.0f} s")
    row(
        "5 broad /follows: their histories still to match, in the background, after the last answer",
        [f"{r.follow_history_s:.1f} s" for r in results],
        "-",
    )
    for name in ("search", "follow"):
        row(
            f"another member's /topics during the most expensive /{name}: first response, worst of 5",
            [f"{max(r.concurrent[name]):.0f} ms" for r in results],
            f"<= {GOAL_CONCURRENT_MS} ms",
        )
    labels = list(dict.fromkeys(label for r in results for label in r.timings))
    for label in labels:
        values = []
        for r in results:
            t = r.timings.get(label, [])
            values.append(f"p50 {statistics.median(t):.0f} / p95 {p95(t):.0f} ms" if t else "-")
        shown = label if label.endswith("first response") else f"{label}, full answer"
        row(shown, values, f"p95 <= {GOAL_P95_MS} ms and <= 2x at 10k")
    row(
        f"resident memory of this process after {args.mix} mixed commands (before them; before the bot started)",
        [f"{r.rss_after:.0f} MiB ({r.rss_before:.0f}; {r.rss_fakes:.0f})" for r in results],
        "- (the loopback servers included)",
    )
    memory_rows(results, args, row)
    print()
    for r in results:
        print(f"- {r.size:,} papers: {r.search_words}")


def memory_report(results: list[Result], args: argparse.Namespace) -> None:
    sizes = [f"{r.size:,} papers" for r in results]
    print(
        f"\n`python bench/bench_million.py --memory-only --sizes {' '.join(map(str, args.sizes))} --mix {args.mix}`\n"
    )
    print(f"| measure | {' | '.join(sizes)} | goal |")
    print(f"|---|{'---:|' * len(results)}---|")

    def row(label: str, values: list[str], goal: str) -> None:
        print(f"| {label} | {' | '.join(values)} | {goal} |")

    memory_rows(results, args, row)
    print("\nThe mix's p95 in each bot process (ms), to compare the checkouts' speed in the same run:\n")
    labels = list(args.checkouts)
    print(f"| command | {' | '.join(f'{label}, {r.size:,}' for r in results for label in labels)} |")
    print(f"|---|{'---:|' * len(results) * len(labels)}")
    commands = list(dict.fromkeys(c for r in results for m in r.bots.values() for c in m.timings))
    for command in commands:
        values = [r.bots[label].timings.get(command, []) for r in results for label in labels]
        print(f"| {command} | {' | '.join(f'{p95(t):.0f}' if t else '-' for t in values)} |")


def memory_rows(
    results: list[Result], args: argparse.Namespace, row: Callable[[str, list[str], str], None]
) -> None:
    """The bot process's memory, a row per checkout (their runs one after the other, on the same store)."""
    for label in args.checkouts:
        row(
            f"`python -m bot` ({label}), a trained scorer model loaded: resident memory after {args.mix} mixed "
            "commands (at start; peak) [anonymous / file-backed after; load average]",
            [
                f"{m.after:.0f} MiB ({m.start:.0f}; {m.peak:.0f}) "
                f"[{m.kinds.get('Anonymous', 0):.0f} / {m.kinds.get('Rss', 0) - m.kinds.get('Anonymous', 0):.0f};"
                f" {m.load:.1f}]"
                for r in results
                for m in [r.bots[label]]
            ],
            f"<= {GOAL_RSS_MIB} MiB",
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--mix", type=int, default=1000, help="mixed commands timed per size")
    parser.add_argument(
        "--bot-checkout",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="run the bot process's mix with the bot of this checkout (repeat to compare; default: this one)",
    )
    parser.add_argument("--memory-only", action="store_true", help="the bot process's memory only")
    args = parser.parse_args()
    args.checkouts = {"this checkout": ROOT} if not args.bot_checkout else {}
    for given in args.bot_checkout:
        label, _, path = given.partition("=")
        args.checkouts[label] = Path(os.path.abspath(path))
    return args


async def main() -> None:
    args = parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    fakes = Fakes()
    discord = await fakes.run(lambda: LoopbackDiscord(timeout=600).__aenter__())
    arxiv = await fakes.run(lambda: LoopbackArxiv([]).__aenter__())
    results = []
    try:
        for size in args.sizes:
            results.append(
                await one_size(size, args.mix, fakes, discord, arxiv, args.checkouts, args.memory_only)
            )
            print(f"  {size:,} papers measured", file=sys.stderr)
    finally:
        await fakes.run(lambda: arxiv.__aexit__(None, None, None))
        await fakes.run(lambda: discord.__aexit__(None, None, None))
        fakes.stop()
    report(results, args)


if __name__ == "__main__":
    asyncio.run(main())

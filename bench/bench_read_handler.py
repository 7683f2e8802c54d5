"""A long read on SQLite's read connections, with and without the progress handler that stops a read at its
deadline: quiet, and while another thread runs Python (as the event loop's thread does while it matches a page or
renders a chart). The handler is a Python call every PROGRESS_STEPS steps of the statement, and each call waits
for the GIL.

    python bench/bench_read_handler.py [--store bench/out/papers-1000000.sqlite3] [--checkout PATH] [--runs 3]

Read-only: it opens only the store's read connections. `--checkout` imports the read pool of another checkout (the
code before a change: its reads without a deadline ran the handler too), so both are timed in one run; state the
load average (`uptime`) beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # this checkout
SCAN = "SELECT count(*), max(length(title)) FROM papers"  # every row read: a long statement at 1M papers


def busy_python(stop: threading.Event) -> None:
    """Python work on another thread, holding the GIL but for the interpreter's switches."""
    n = 0
    while not stop.is_set():
        n += 1


async def timed(read: Callable[[], Awaitable[None]], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await read()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def measure(checkout: Path, store: Path, runs: int, deadline: bool) -> tuple[float, float]:
    """(quiet, busy) median seconds of the scan through a read connection of `checkout`'s pool."""
    sys.path.insert(0, str(checkout))  # resolved by main()
    try:
        for name in [m for m in sys.modules if m == "bot" or m.startswith("bot.")]:
            del sys.modules[name]
        from bot.clock import SystemClock
        from bot.store.database import ReadPool
    finally:
        sys.path.pop(0)
    clock = SystemClock()
    pool = ReadPool()
    await pool.open(store, 1, clock)

    async def read() -> None:
        async with pool.connection(clock.monotonic() + 3600 if deadline else None) as conn:
            await conn.execute_fetchall(SCAN)

    try:
        await read()  # the file's pages into the OS cache
        quiet = await timed(read, runs)
        stop = threading.Event()
        worker = threading.Thread(target=busy_python, args=(stop,))
        worker.start()
        try:
            busy = await timed(read, runs)
        finally:
            stop.set()
            worker.join()
    finally:
        await pool.close()
    return quiet, busy


async def compare(rows: list[tuple[str, Path, bool]], store: Path, runs: int) -> None:
    print(f"`{SCAN}` on {store.name}, median of {runs}\n")
    print("| read | quiet | another thread running Python | ratio |")
    print("|---|---|---|---|")
    for label, checkout, deadline in rows:
        quiet, busy = await measure(checkout, store, runs, deadline)
        print(f"| {label} | {quiet:.2f} s | {busy:.2f} s | {busy / quiet:.1f}x |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=HERE / "bench" / "out" / "papers-1000000.sqlite3")
    parser.add_argument("--checkout", type=Path, help="another checkout, timed in the same run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not args.store.exists():
        sys.exit(f"{args.store} not found: python bench/bench_million.py builds it")
    rows = [
        ("this checkout, a read without a deadline", HERE, False),
        ("this checkout, a read with a deadline (/search)", HERE, True),
    ]
    if args.checkout:
        rows.append((f"{args.checkout}, a read without a deadline", args.checkout.resolve(), False))
    asyncio.run(compare(rows, args.store, args.runs))


if __name__ == "__main__":
    main()

"""SQLite's memory in the bot's process stays within the connections' page caches, whatever was read or
written: at 1M papers the readers' caches (8 MiB each) filled within the first commands and the writer's (64 MiB)
with the first ingest, and kept all of it for as long as the bot ran."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import random
from pathlib import Path

from bot.clock import FakeClock
from bot.store import SqliteStore
from tests.factories import make_paper

MIB = 2**20
BUDGET = (
    32 * MIB
)  # the bot's whole SQLite memory: a 16 MiB writer, four 2 MiB readers, schemas and statements


def sqlite_heap() -> int:
    """Bytes SQLite holds now in this process (every connection: page caches, schemas, statements)."""
    library = ctypes.CDLL(ctypes.util.find_library("sqlite3"))  # the library Python's sqlite3 runs on
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return int(library.sqlite3_memory_used())


async def test_sqlite_holds_no_more_than_its_page_caches_after_an_ingest_and_reads(tmp_path: Path) -> None:
    rng = random.Random(3)
    words = [f"w{n}" for n in range(20_000)]
    papers = [
        make_paper(n, abstract=" ".join(rng.choices(words, k=600)), title=" ".join(rng.choices(words, k=12)))
        for n in range(6_000)
    ]
    before = sqlite_heap()
    store = await SqliteStore.open(tmp_path / "papers.sqlite3", FakeClock())
    try:
        for start in range(0, len(papers), 1_000):  # pages of an ingest
            await store.papers.upsert(papers[start : start + 1_000], seen_at=FakeClock().now())
        size = (tmp_path / "papers.sqlite3").stat().st_size + (tmp_path / "papers.sqlite3-wal").stat().st_size
        assert size > 2 * BUDGET  # far more than the caches hold

        # every reader reads the whole file at once
        scans = [
            store.db.fetchall("SELECT sum(length(abstract)), count(*) FROM papers_fts") for _ in range(8)
        ]
        await asyncio.gather(*scans, store.db.fetchall("SELECT sum(length(abstract)) FROM papers"))

        held = sqlite_heap() - before
        assert held > BUDGET // 2  # the counter sees these connections: their caches did fill
        assert held <= BUDGET
    finally:
        await store.close()

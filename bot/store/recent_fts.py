"""The newest papers' own full-text index (migration 0019), where a query of one phrase is ranked in a big
store: bm25() there counts the papers holding the phrase among 10,000 at most, not a million.

The window holds every row id from `low` to `high`, and no other. It is not kept by a trigger on every new
paper (indexing each paper twice made ingest 2-3x slower): a search that finds papers newer than the window
ranks over the whole index, as before, and has the window brought up to date in the background, a chunk per
short write transaction, at most `span` papers however many came (`RecentWindow.refresh`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Sequence

from bot.store.bm25 import WEIGHTS, average_length, bm25_order, hits_from_scores, length_factor, varint_sum
from bot.store.database import Database

log = logging.getLogger(__name__)

# bm25 with the weights and with them doubled: the two scores' ratio gives each paper's weighted hits
_SCORES = ", ".join(f"bm25(papers_recent_fts, {', '.join(str(w * k) for w in WEIGHTS)})" for k in (1, 2))
CHUNK = 500  # papers indexed (and as many taken out) per write transaction of a refresh: ~0.1 s of the writer


class RecentWindow:
    def __init__(self, db: Database, *, chunk: int = CHUNK) -> None:
        self.db = db
        self.chunk = chunk
        self._refresh: asyncio.Task[None] | None = None

    async def ranked(
        self,
        fts: str,
        where: str,
        params: Sequence[object],
        pool: int,
        *,
        from_papers: int,
        deadline: float | None = None,
    ) -> list[int] | None:
        """bm25's order over the whole index of the pool (the newest `pool` candidates) of a query of one
        phrase, ranked within the window; None when it cannot be: a store of fewer than `from_papers` papers
        (bm25's count over the whole index costs less than the ~3 ms this adds), a window behind the newest
        papers (brought up to date in the background meanwhile), or a pool reaching below the window.
        The window's bm25 weighs each paper's hits by the window's average length, not the whole index's: each
        paper's weighted hits are taken back from its scores and scored again with the whole index's average,
        so the order is the one bm25 gives over the whole index."""
        joined = " JOIN papers p ON p.pk = papers_recent_fts.rowid" if where else ""
        matching = f" WHERE papers_recent_fts MATCH ?{where}"
        # The window's candidates counted first, without ranking (0.5 ms at most), and only in a big store
        # with the window up to date.
        state = await self.db.fetchone(
            "SELECT big, current, CASE WHEN big AND current THEN"
            f" (SELECT count(*) FROM (SELECT 1 FROM papers_recent_fts{joined}{matching} LIMIT ?)) END,"
            " (SELECT block FROM papers_recent_fts_data WHERE id = 1),"
            " (SELECT block FROM papers_fts_data WHERE id = 1)"
            " FROM (SELECT (SELECT papers FROM paper_count) >= ? AS big,"
            " high >= (SELECT COALESCE(MAX(pk), 0) FROM papers) AS current FROM papers_recent_window)",
            (fts, *params, pool, from_papers),
            deadline=deadline,
        )
        if state is None or not state[0]:
            return None
        _, current, found, in_window, in_index = state
        if not current:
            self.refresh_soon()
            return None
        if found < pool or in_window is None or in_index is None:
            return None
        # Whether the window is still up to date, asked again in the statement that reads it (another read
        # connection, perhaps after new papers came).
        rows = await self.db.fetchall(
            f"SELECT papers_recent_fts.rowid, {_SCORES}, d.sz,"
            " (SELECT high FROM papers_recent_window) >= (SELECT COALESCE(MAX(pk), 0) FROM papers)"
            f" FROM papers_recent_fts"
            f" JOIN papers_recent_fts_docsize d ON d.id = papers_recent_fts.rowid{joined}{matching}"
            " ORDER BY papers_recent_fts.rowid DESC LIMIT ?",
            (fts, *params, pool),
            deadline=deadline,
        )
        if not rows or len(rows) < pool or not rows[-1][4]:  # it moved on, or newer papers came, meanwhile
            return None
        window_average = average_length(in_window)
        scored = []
        for pk, once, doubled, size, _ in rows:
            length = float(varint_sum(size))
            hits = hits_from_scores(once, doubled, length_factor(length, window_average))
            if hits is None:
                return None
            scored.append((pk, hits, length))
        return bm25_order(scored, average_length(in_index))

    def refresh_soon(self) -> None:
        """Bring the window up to date in the background, unless that is under way."""
        if self._refresh is None or self._refresh.done():
            # A context of its own: the search that asked may run inside a caller's transaction.
            self._refresh = asyncio.create_task(self._refresh_logged(), context=contextvars.Context())

    async def refreshed(self) -> None:
        """Wait for a refresh under way, if any."""
        if self._refresh is not None:
            await asyncio.shield(self._refresh)

    async def close(self) -> None:
        """Stop a refresh under way (what it committed stays: the next one goes on from there)."""
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
            await asyncio.gather(self._refresh, return_exceptions=True)

    async def _refresh_logged(self) -> None:
        try:
            await self.refresh()
        except Exception:
            log.exception(
                "bringing the newest papers' search index up to date failed; the next search retries"
            )

    async def refresh(self) -> None:
        """Index the papers newer than the window and take out as many of its oldest, a chunk per short write
        transaction, until it holds the newest `span`. More than `span` new papers (a backfill): the window
        is emptied and the newest `span` indexed, so no paper is indexed that would be taken out again."""
        while True:
            async with self.db.transaction() as conn:
                async with conn.execute(
                    "SELECT low, high, span, (SELECT COALESCE(MAX(pk), 0) FROM papers)"
                    " FROM papers_recent_window"
                ) as cur:
                    row = await cur.fetchone()
                if row is None:
                    return
                low, high, span, newest = row
                if high >= newest:
                    return
                if newest - high > span:
                    await conn.execute(
                        "INSERT INTO papers_recent_fts (papers_recent_fts) VALUES ('delete-all')"
                    )
                    low, high = newest - span + 1, newest - span
                    await conn.execute("UPDATE papers_recent_window SET low = ?, high = ?", (low, high))
                    continue  # committed: the newest are indexed in the next transactions
                upto = min(high + self.chunk, newest)
                await conn.execute(
                    "INSERT INTO papers_recent_fts (rowid, title, abstract, authors)"
                    " SELECT pk, title, abstract, authors FROM papers WHERE pk > ? AND pk <= ?",
                    (high, upto),
                )
                kept_from = max(low, upto - span + 1)
                # Taken out with the text it was indexed with: still the stored one (the triggers re-index a
                # paper of the window that changes).
                await conn.execute(
                    "INSERT INTO papers_recent_fts (papers_recent_fts, rowid, title, abstract, authors)"
                    " SELECT 'delete', pk, title, abstract, authors FROM papers WHERE pk >= ? AND pk < ?",
                    (low, kept_from),
                )
                await conn.execute("UPDATE papers_recent_window SET low = ?, high = ?", (kept_from, upto))

"""Where each source stands (watermark, validators, health) and backfill progress per window."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.models import BackfillWindow, SkippedEntry, SkippedSummary, SourceState
from bot.store.papers import from_ts, to_ts
from bot.store.sql import SqlDatabase

ERROR_CHARS = 500


def _dt(value: int | None) -> datetime | None:
    return from_ts(value) if value is not None else None


class SourceRepo:
    """Written in SQL both engines run but for the names of the two-argument maximum and minimum, which the
    PostgreSQL store's subclass renames."""

    GREATEST, LEAST = "MAX", "MIN"  # SQLite's scalar max() and min()

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def get(self, source: str) -> SourceState:
        row = await self.db.fetchone("SELECT * FROM source_state WHERE source = ?", (source,))
        if row is None:
            return SourceState(source)
        return SourceState(
            source=source,
            watermark=_dt(row["watermark"]),
            etag=row["etag"],
            last_modified=row["last_modified"],
            last_attempt=_dt(row["last_attempt"]),
            last_success=_dt(row["last_success"]),
            last_error=row["last_error"],
            consecutive_failures=row["consecutive_failures"],
            papers_stored=row["papers_stored"],
            skipped=await self.skipped_summary(source),
        )

    async def all(self) -> list[SourceState]:
        rows = await self.db.fetchall("SELECT source FROM source_state ORDER BY source")
        return [await self.get(r["source"]) for r in rows]

    async def record_skipped(
        self, source: str, entries: Sequence[SkippedEntry], at: datetime
    ) -> list[SkippedEntry]:
        """Remember entries `source` skipped; return those it had not skipped before (to log them once)."""
        if not entries:
            return []
        unique = list({e.entry_id: e for e in entries}.values())
        known: set[str] = set()
        async with self.db.transaction():  # the lookup and the write see the same rows
            for i in range(0, len(unique), 500):
                chunk = [e.entry_id for e in unique[i : i + 500]]
                rows = await self.db.fetchall(
                    "SELECT entry FROM skipped_entries WHERE source = ? AND entry IN"
                    f" ({','.join('?' * len(chunk))})",
                    (source, *chunk),
                )
                known.update(r[0] for r in rows)
            await self.db.executemany(
                "INSERT INTO skipped_entries (source, entry, reason, first_seen, last_seen)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (source, entry) DO UPDATE SET"
                " reason = excluded.reason, last_seen = excluded.last_seen",
                [(source, e.entry_id, e.reason[:ERROR_CHARS], to_ts(at), to_ts(at)) for e in unique],
            )
        return [e for e in unique if e.entry_id not in known]

    async def skipped_summary(self, source: str) -> SkippedSummary | None:
        count = await self.db.fetchone("SELECT COUNT(*) FROM skipped_entries WHERE source = ?", (source,))
        latest = await self.db.fetchone(
            "SELECT entry, reason, first_seen FROM skipped_entries WHERE source = ?"
            " ORDER BY first_seen DESC, entry LIMIT 1",
            (source,),
        )
        if count is None or latest is None:
            return None
        entry = SkippedEntry(latest["entry"], latest["reason"])
        return SkippedSummary(source, int(count[0]), entry, from_ts(latest["first_seen"]))

    async def skipped_elsewhere(self) -> list[SkippedSummary]:
        """Skipped entries of sources without a poll state (backfill jobs)."""
        rows = await self.db.fetchall(
            "SELECT DISTINCT source FROM skipped_entries"
            " WHERE source NOT IN (SELECT source FROM source_state) ORDER BY source"
        )
        found = [await self.skipped_summary(r[0]) for r in rows]
        return [s for s in found if s is not None]

    async def record_success(
        self,
        source: str,
        at: datetime,
        *,
        watermark: datetime | None = None,
        papers: int = 0,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> None:
        """A complete cycle: advance the watermark (never backwards, never past `at`) and clear the error."""
        if watermark is not None:
            watermark = min(watermark, at)
        await self.db.execute(
            "INSERT INTO source_state (source, watermark, etag, last_modified, last_attempt, last_success,"
            " consecutive_failures, papers_stored) VALUES (?, ?, ?, ?, ?, ?, 0, ?) "
            "ON CONFLICT (source) DO UPDATE SET "
            f" watermark = {self.LEAST}({self.GREATEST}(COALESCE(source_state.watermark, 0),"
            " COALESCE(excluded.watermark, 0)),"
            " excluded.last_success),"
            " etag = COALESCE(excluded.etag, source_state.etag),"
            " last_modified = COALESCE(excluded.last_modified, source_state.last_modified),"
            " last_attempt = excluded.last_attempt, last_success = excluded.last_success, last_error = NULL,"
            " consecutive_failures = 0, papers_stored = source_state.papers_stored + excluded.papers_stored",
            (
                source,
                to_ts(watermark) if watermark else None,
                etag,
                last_modified,
                to_ts(at),
                to_ts(at),
                papers,
            ),
        )

    async def record_failure(self, source: str, at: datetime, error: str, *, papers: int = 0) -> None:
        await self.db.execute(
            "INSERT INTO source_state (source, last_attempt, last_error, consecutive_failures, papers_stored)"
            " VALUES (?, ?, ?, 1, ?) ON CONFLICT (source) DO UPDATE SET last_attempt = excluded.last_attempt,"
            " last_error = excluded.last_error, consecutive_failures = source_state.consecutive_failures + 1,"
            " papers_stored = source_state.papers_stored + excluded.papers_stored",
            (source, to_ts(at), error[:ERROR_CHARS], papers),
        )


class BackfillRepo:
    """Written in SQL both engines run: the SQLite and the PostgreSQL store share it."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    async def windows(self, job: str) -> list[BackfillWindow]:
        rows = await self.db.fetchall(
            "SELECT window_start, window_end, done, papers FROM backfill_windows WHERE job = ?"
            " ORDER BY window_start DESC, window_end DESC",
            (job,),
        )
        return [BackfillWindow(from_ts(r[0]), from_ts(r[1]), bool(r[2]), r[3]) for r in rows]

    async def plan(self, job: str, windows: list[tuple[datetime, datetime]]) -> None:
        """Add windows not yet planned (a resumed job keeps its progress)."""
        await self.db.executemany(
            "INSERT INTO backfill_windows (job, window_start, window_end) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(job, to_ts(s), to_ts(e)) for s, e in windows],
        )

    async def split(
        self, job: str, window: tuple[datetime, datetime], parts: list[tuple[datetime, datetime]]
    ) -> None:
        async with self.db.transaction():
            await self.db.execute(
                "DELETE FROM backfill_windows WHERE job = ? AND window_start = ? AND window_end = ? AND done = 0",
                (job, to_ts(window[0]), to_ts(window[1])),
            )
            await self.plan(job, parts)

    async def mark_done(self, job: str, window: tuple[datetime, datetime], papers: int) -> None:
        await self.db.execute(
            "UPDATE backfill_windows SET done = 1, papers = ? WHERE job = ? AND window_start = ? AND window_end = ?",
            (papers, job, to_ts(window[0]), to_ts(window[1])),
        )

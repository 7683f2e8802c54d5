"""One cycle of a source: read its batches and hand each to the intake.

Sources (bot/sources/base.py) yield Paper values and what they know about their announcement; this module knows
nothing of HTTP or XML. Each batch goes through the intake (bot/intake.py: store, match topics, queue posts) in
its own transaction, with its skipped entries and announcements. The source's state (the API's watermark, a
feed's HTTP validators) advances only when a cycle completes: after an error or a crash, the next cycle reads
the same again, and the upsert makes the repeat harmless.

Nothing a batch holds can stop polling: an unusable entry is skipped, recorded once per source and logged once,
and the rest of the batch is stored. Any failure of a cycle is recorded for /status and logged, and the next
cycle tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.clock import Clock
from bot.errors import SourceError
from bot.intake import ExtraWrites, Intake, IntakeReport
from bot.models import Announcement, Paper, SkippedEntry
from bot.sources.api_source import source_key
from bot.sources.base import Batch, Source, Validators
from bot.store import Store

log = logging.getLogger(__name__)


@dataclass
class CycleReport:
    source: str
    pages: int = 0
    fetched: int = 0
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: int = 0
    announced: int = 0  # announcements served (a feed's)
    watermark: datetime | None = None
    complete: bool = False
    error: str | None = None

    def summary(self) -> str:
        state = "complete" if self.complete else f"stopped early: {self.error}"
        mark = self.watermark.strftime("%Y-%m-%d %H:%M UTC") if self.watermark else "none"
        skipped = ""
        if self.skipped:
            skipped = f", {self.skipped} unusable {'entry' if self.skipped == 1 else 'entries'} skipped"
        return (
            f"{self.source}: {self.fetched} papers fetched in {self.pages} pages{skipped}, {len(self.new)} new, "
            f"{len(self.updated)} new versions; newest submission {mark}; cycle {state}"
        )


__all__ = ["CycleReport", "Ingestor", "source_key", "store_page"]


async def store_page(
    intake: Intake,
    source: str,
    papers: Sequence[Paper],
    skipped: Sequence[SkippedEntry],
    *,
    announce: bool,
    announcements: Sequence[Announcement] = (),
    also: ExtraWrites | None = None,
) -> IntakeReport:
    """One page through the intake, its skipped entries and announcements recorded in the same transaction (and
    `also`, the caller's own writes). Each skipped entry is logged the first time this source serves it, so a
    bad entry seen at every poll logs once."""
    store = intake.store
    first_seen: list[SkippedEntry] = []

    async def record_skipped() -> None:
        first_seen.extend(await store.sources.record_skipped(source, skipped, intake.clock.now()))
        await store.announcements.record(announcements, intake.clock.now())
        if also is not None:
            await also()

    report = await intake.store_papers(papers, announce=announce, also=record_skipped)
    for entry in first_seen:
        log.warning("%s: skipped entry %s: %s", source, entry.entry_id, entry.reason)
    return report


class Ingestor:
    """Runs cycles of one source."""

    def __init__(self, store: Store, source: Source, clock: Clock, *, intake: Intake) -> None:
        self.store = store
        self.reader = source
        self.clock = clock
        self.intake = intake
        self.source = source.key

    async def poll_once(self) -> CycleReport:
        """Run one cycle. Failures are recorded (for /status), logged and reported, never raised: the next
        cycle retries. Only cancellation propagates."""
        report = CycleReport(self.source)
        try:
            watermark, validators = await self._walk(report, self.clock.now())
        except SourceError as exc:
            log.warning("poll of %s failed after %d pages: %s", self.source, report.pages, exc)
            return await self._failed(report, str(exc))
        except Exception as exc:
            # A fault of this program or of the machine (a full disk): the traceback goes to the log, a line
            # that says where to look goes to /status.
            log.exception("poll of %s failed after %d pages", self.source, report.pages)
            return await self._failed(
                report, f"internal error ({type(exc).__name__}); the log has the details"
            )
        report.complete = True
        report.watermark = watermark
        await self.store.sources.record_success(
            self.source,
            self.clock.now(),
            watermark=watermark,
            papers=len(report.new),
            etag=validators.etag if validators else None,
            last_modified=validators.last_modified if validators else None,
        )
        return report

    async def refuse(self, error: str) -> None:
        """Record a cycle refused before any request (a setting missing), so /status shows why."""
        await self.store.sources.record_failure(self.source, self.clock.now(), error)

    async def _failed(self, report: CycleReport, error: str) -> CycleReport:
        report.error = error
        await self.store.sources.record_failure(self.source, self.clock.now(), error, papers=len(report.new))
        return report

    async def _walk(
        self, report: CycleReport, started: datetime
    ) -> tuple[datetime | None, Validators | None]:
        """Store the batches of this cycle; return the watermark and validators its last batch gave."""
        state = await self.store.sources.get(self.source)
        watermark: datetime | None = None
        validators: Validators | None = None
        async for batch in self.reader.read(state, started):
            papers = [*batch.papers, *await self._known(batch)]
            result = await store_page(
                self.intake,
                self.source,
                papers,
                batch.skipped,
                announce=batch.announce,
                announcements=batch.announcements,
            )
            report.pages += batch.served
            report.fetched += len(papers)
            report.skipped += len(batch.skipped)
            report.announced += len(batch.announcements)
            report.new += result.new
            report.updated += result.updated
            watermark = batch.watermark or watermark
            validators = batch.validators or validators
            if batch.past_range and not result.new and not result.updated:
                break  # a server that ignored the range asked for: we have walked past it
        return watermark, validators

    async def _known(self, batch: Batch) -> list[Paper]:
        """The batch's updates of papers the store holds."""
        if not batch.updates:
            return []
        known = await self.store.papers.stored_ids([p.arxiv_id for p in batch.updates])
        return [p for p in batch.updates if p.arxiv_id in known]

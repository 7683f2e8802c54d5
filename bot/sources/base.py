"""What the pipeline sees of a source: it yields Paper values, and what it knows about their announcement.

A source is read once per cycle, a batch at a time (a page of the API, the day's RSS feed); how it talks to the
world (HTTP, XML, conditional GET) stays inside it. `bot.ingest.Ingestor` stores the batches and records where the
source stands, so a source never touches the store: what it needs from the last complete cycle comes in as the
source's `SourceState`, and what the next cycle needs goes out on the batches (`watermark`, `validators`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.models import Announcement, Paper, SkippedEntry, SourceState


@dataclass(frozen=True, slots=True)
class Validators:
    """HTTP validators of the answer a batch came from, to send with the next cycle's conditional request."""

    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True, slots=True)
class Batch:
    """One step of a source's cycle.

    `papers` are stored; `updates` are new versions of papers announced before, stored only when the store
    already holds the paper (one first seen as a new version lies outside the history). `announce`: the new
    papers among them are announced now, so they are posted; False for history. `announcements` say how arXiv
    announced them, per category. `skipped` entries held no usable paper. `watermark` and `validators`: what
    the source's state becomes when the cycle completes after this batch (None: unchanged). `past_range`: the
    source served papers older than the range it asked for (a server ignoring the range): once such a batch
    brings nothing new, reading on only repeats known papers.
    """

    papers: Sequence[Paper] = ()
    updates: Sequence[Paper] = ()
    announcements: Sequence[Announcement] = ()
    skipped: Sequence[SkippedEntry] = ()
    announce: bool = True
    watermark: datetime | None = None
    validators: Validators | None = None
    past_range: bool = False

    @property
    def served(self) -> bool:
        """Whether the source served anything in this batch (an unchanged feed serves nothing)."""
        return bool(self.papers or self.updates or self.skipped)


class Source(Protocol):
    """A source of papers, read on the live schedule."""

    @property
    def key(self) -> str:
        """The name its state is recorded under (and /status shows), e.g. `arxiv-api:cs.AI,cs.LG`."""
        ...

    def read(self, state: SourceState, now: datetime) -> AsyncIterator[Batch]:
        """This cycle's batches, given where the last complete cycle left the source. Raises SourceError when
        the source fails part way; the batches already yielded stand. The reader may stop early."""
        ...


class PaperLookup(Protocol):
    """Full records by id (the arXiv API): what completes papers a feed could describe only in part."""

    async def fetch_ids(self, ids: Sequence[str]) -> list[Paper]: ...

"""What the rest of paperwatch may ask of a store: one protocol per repository and one for the store.

SQLite (`bot.store.sqlite.SqliteStore`) is the implementation today; a second one (PostgreSQL) implements the
same protocols, returns the same records (`bot.models`) and raises the same errors, so nothing above the store
changes. A test compares each implementation with these protocols, method by method.

Contracts every implementation keeps:
- Atomic writes. Each write method is one transaction of its own, unless it runs inside
  `async with store.transaction():`, where it joins that transaction: committed with it, rolled back with it.
  Reads inside a transaction see its writes; reads outside see committed data only.
- Times go in as tz-aware datetimes and come back tz-aware UTC, to the second.
- Papers are keyed by their base arXiv id (without version). A "window" [start, end) counts papers by their v1
  submission time (`Paper.published`).
- `fts` arguments are a full-text prefilter over title, abstract and authors in SQLite FTS5 syntax, as
  `bot.topics.query.TopicQuery` writes it (None: no text condition). It may let through papers the query does
  not match (callers confirm each one with the query's exact evaluator) but must never drop one it matches; a
  store whose index reads another syntax translates it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol, Self

from bot.models import (
    Announcement,
    BackfillWindow,
    Mode,
    Paper,
    PendingDelivery,
    Reach,
    SearchHit,
    SkippedEntry,
    SkippedSummary,
    SourceState,
    UpsertResult,
    Wanted,
    WorkShare,
)
from bot.store.member_protocol import RatingRepository, SavedRepository, SimilarRepository
from bot.store.scorer_models import ScorerModelRepository
from bot.store.topic_protocol import FollowRepository, TopicRepository


class TopicNameTaken(Exception):
    """A server already has a topic whose name has this key (two saves raced, or a legacy row)."""


class PaperRepository(Protocol):
    async def upsert(self, papers: Iterable[Paper], *, seen_at: datetime) -> UpsertResult:
        """Store papers in one transaction. A new id is inserted, first seen at `seen_at`; a newer copy replaces
        the stored one but keeps its first-seen time and the earliest `published` ever stored (the paper's
        topic matches move with it); an older or identical copy changes nothing. Newer: a higher version; of
        the same version, a full copy over a provisional one (`Paper.provisional`) whatever their times, else
        the one updated later. Of several copies of one id in a batch, the newest counts. Idempotent: the same
        papers again are all reported unchanged."""

    async def get(self, arxiv_id: str) -> Paper | None:
        """The stored version of a paper (by base id), every field as it was given, with `announced` filled in
        when an announcement of this version is recorded; None if not stored."""

    async def stored_ids(self, arxiv_ids: Sequence[str]) -> set[str]:
        """Those of the (base) ids that are stored."""

    async def provisional(self, *, since: datetime, limit: int) -> list[str]:
        """Ids of provisional papers (stored from an announcement feed, waiting for a full copy) last written
        since `since`, those waiting longest first, at most `limit`."""

    async def first_seen(self, arxiv_id: str) -> datetime | None:
        """When the paper was first stored (a new version does not move it); None if not stored."""

    async def count(self) -> int:
        """Papers stored (one per base id)."""

    async def count_in_categories(self, categories: Sequence[str], start: datetime, end: datetime) -> int:
        """Distinct papers of any of the categories submitted (v1) in [start, end). Asked for every command
        that shows momentum: whole-day windows must stay fast on a million papers."""

    async def category_names(self) -> list[str]:
        """Every category a stored paper has, in ascending order."""

    async def weekly_category_counts(self, since: datetime) -> list[tuple[str, str, int]]:
        """(week start as YYYY-MM-DD, Monday-based, UTC; category; papers) for papers submitted since `since`,
        by week, then category."""

    def texts(self, *, after: int = 0, batch: int = 5000) -> AsyncIterator[list[tuple[int, str, str, str]]]:
        """(position, arxiv id, title, abstract) of the papers first stored after position `after` (0: all), in
        the order they were first stored, in batches of at most `batch`: what the learned scorer reads of each
        paper, once. Positions are positive and only grow."""
        ...


class SearchRepository(Protocol):
    async def ranked(
        self,
        fts: str | None,
        *,
        topic_id: int | None = None,
        including: Sequence[int] = (),
        categories: Sequence[str] = (),
        since: datetime | None = None,
        limit: int = 200,
        offset: int = 0,
        snippets: bool = True,
        suggested: bool = False,
    ) -> list[SearchHit]:
        """Papers passing the prefilter (and matched by the topic or one of the topics `including` adds to it,
        its learned scorer's suggestions included with `suggested`,
        of any of the categories, submitted since),
        best first by relevance with title hits weighing most (newest first when `fts` is None), from the
        `offset`-th on, at most `limit`. Each hit's snippet is an excerpt of the abstract with the matched words
        between HIGHLIGHT_START and HIGHLIGHT_END (empty without `snippets`). Raises ValueError for a negative
        limit or offset."""

    async def ranked_ids(
        self,
        fts: str,
        *,
        topic_id: int | None = None,
        including: Sequence[int] = (),
        categories: Sequence[str] = (),
        since: datetime | None = None,
        pool: int,
    ) -> list[int]:
        """The newest `pool` candidates' row ids (filtered as `ranked`), best first, ranked once."""

    async def hits(self, pks: Sequence[int]) -> list[SearchHit]:
        """The papers of these row ids, in that order, as hits without a snippet."""

    async def with_snippets(self, fts: str | None, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits with their snippets, cut for these hits only."""

    async def count(
        self,
        fts: str | None,
        *,
        topic_id: int | None = None,
        including: Sequence[int] = (),
        categories: Sequence[str] = (),
        since: datetime | None = None,
        cap: int,
    ) -> int:
        """How many papers pass the prefilter and the filters, counted up to `cap`."""

    async def papers_holding(self, words: Sequence[str], *, cap: int) -> dict[str, int]:
        """How many papers hold each word (a word as `bot.topics.query.fold_words` folds it, letters and digits
        only; the index's own stemming applies), counted up to `cap`, for every word given (0: none). Bounded by
        `cap` whatever the word: the question answerer asks it before ranking, to leave out words too common
        to rank by."""

    async def in_window(
        self,
        *,
        topic_id: int,
        including: Sequence[int] = (),
        start: datetime,
        end: datetime,
        limit: int,
    ) -> list[Paper]:
        """The topic's exact matches (and those of the topics `including` adds to it) first submitted (v1) in
        [start, end): all of them, or a sample of `limit` spread over the window (the same sample every time
        while the window holds the same papers). Raises ValueError for a negative limit."""


class AnnouncementRepository(Protocol):
    async def record(self, announcements: Sequence[Announcement], at: datetime) -> int:
        """Remember how arXiv announced stored papers, per (paper, category), meant for the transaction that
        stores them; announcements of papers not stored are dropped. The newest version wins and the first
        sighting of a version stays, so a feed serving an old batch again changes nothing. Returns how many
        were written or moved on. Idempotent."""

    async def of_paper(self, arxiv_id: str) -> list[Announcement]:
        """The recorded announcement of each category of a paper, by category."""


class SourceRepository(Protocol):
    async def get(self, source: str) -> SourceState:
        """Where a polled source stands, with a summary of the entries it skipped; a source never recorded
        gets an empty state (never None)."""

    async def all(self) -> list[SourceState]:
        """Every recorded source, by name."""

    async def record_skipped(
        self, source: str, entries: Sequence[SkippedEntry], at: datetime
    ) -> list[SkippedEntry]:
        """Remember entries `source` skipped (by entry id; the reason and time of a known one are updated) and
        return those not skipped before, once each, so the caller logs each entry once. Idempotent."""

    async def skipped_summary(self, source: str) -> SkippedSummary | None:
        """How many distinct entries `source` skipped and the one first skipped most recently; None if none."""

    async def skipped_elsewhere(self) -> list[SkippedSummary]:
        """Summaries of the sources that skipped entries but have no poll state (backfill jobs), by name."""

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
        """A complete cycle at `at`: the watermark advances (never backwards, never past `at`), validators
        given replace the stored ones, the error and the failure count are cleared, `papers` are added."""

    async def record_failure(self, source: str, at: datetime, error: str, *, papers: int = 0) -> None:
        """A failed cycle at `at`: the error (shortened) is kept, the failure count grows, the watermark stays,
        `papers` (stored before the failure) are added."""


class BackfillRepository(Protocol):
    async def windows(self, job: str) -> list[BackfillWindow]:
        """A job's windows, newest first."""

    async def plan(self, job: str, windows: list[tuple[datetime, datetime]]) -> None:
        """Add the windows not planned yet; a window already planned keeps its progress. Idempotent."""

    async def split(
        self, job: str, window: tuple[datetime, datetime], parts: list[tuple[datetime, datetime]]
    ) -> None:
        """Replace a window not done with its parts, in one transaction."""

    async def mark_done(self, job: str, window: tuple[datetime, datetime], papers: int) -> None:
        """The window is stored, with `papers` papers."""


class DeliveryRepository(Protocol):
    async def enqueue(self, wanted: Sequence[Wanted], at: datetime) -> None:
        """One outbox row per (channel, paper), meant for the transaction that stores the papers causing
        it; a second topic adds its name to the same row. A paper already sent to a channel is never
        queued there again; an 'each' follow upgrades a pending digest row to 'each'. Idempotent."""

    async def fan_out(self, reach: Sequence[Reach], at: datetime) -> int:
        """One poll's posts, written inside the database: each working follow a `Reach` row names (see Reach)
        wants its paper, and the outbox gets one row per (channel, paper) as `enqueue` writes them, with a lease
        row for each new channel. Papers not stored are skipped. Returns how many rows it added."""

    async def channels_due(self, mode: Mode, now: datetime, *, console: bool = False) -> list[int]:
        """Channels with pending rows of this mode due by `now`: Discord channels (positive ids), or with
        `console` the terminal's (negative ids)."""

    async def for_channel(
        self, channel_id: int, *, mode: Mode, now: datetime | None, statuses: Sequence[str] = ("pending",)
    ) -> list[PendingDelivery]:
        """A channel's rows of this mode and these statuses due by `now` (any, when None), in announcement
        order: when queued, then submission time. Each paper is the stored version, with `announced` filled in
        as `PaperRepository.get` fills it (the card says how arXiv announced it), and names the topics its card
        shows: the most specific topics the paper matched at or below the followed topics it stands for."""

    async def claim_channels(
        self,
        worker: str,
        mode: Mode,
        now: datetime,
        until: datetime,
        *,
        console: bool = False,
        limit: int = 50,
        holding: Sequence[int] = (),
    ) -> list[int]:
        """Take the lease, until `until`, of up to `limit` channels (Discord's, or with `console` the
        terminal's) with rows of this mode due by `now` or left 'sending', whose lease is free, expired or
        `worker`'s already, other than those it is `holding` (posting in now: their leases are renewed by
        `hold`). Workers claiming at once (other processes too) never get the same channel."""

    async def hold(self, worker: str, channel_id: int, now: datetime, until: datetime) -> bool:
        """Take or renew one channel's lease until `until`; False when another worker holds it unexpired."""

    async def release(self, worker: str, channel_ids: Sequence[int]) -> None:
        """Free the leases `worker` holds on these channels."""

    async def share(self, worker: str, now: datetime, until: datetime, *, console: bool = False) -> WorkShare:
        """Show `worker` in a round (claiming, posting or waiting for channels others hold) until `until`, and
        count the channels (Discord's, or with `console` the terminal's) with 'each' rows due by `now` or left
        'sending', and the workers in a round now (on PostgreSQL only those whose process runs)."""

    async def leave(self, worker: str) -> None:
        """`worker`'s round is over: it no longer counts among the workers sharing the channels."""

    async def keep_alive(self, worker: str) -> None:
        """Show `worker` as running while this process runs: once its process dies, other workers take its
        leases at once, unexpired (PostgreSQL; SQLite waits for them to expire)."""

    async def retire(self, worker: str) -> None:
        """`worker` stopped: it is no longer shown as running."""

    async def take_turn(self, now: datetime, limit: int, window: float) -> datetime | None:
        """A turn for one request to Discord under the bot token's global limit, shared by every process of the
        store: the time, from `now` on, at which it may go so that at most `limit` go in any `window` seconds
        (the turns given out so far counted). None when the store serves one process only (SQLite): it paces
        itself alone."""

    async def in_flight(
        self, *, console: bool = False, channel_id: int | None = None
    ) -> list[PendingDelivery]:
        """Rows claimed for sending when their worker stopped ('sending'), of one channel when given: sent or
        not, nobody knows yet."""

    async def mark_sending(self, ids: Sequence[int], at: datetime | None = None) -> None:
        """Claim rows for a send ('sending', one attempt more, at `at` when given), before the send."""

    async def sending_since(self, channel_id: int) -> datetime | None:
        """When the channel's rows left 'sending' were marked so (the earliest); None when it has none, or when
        the time of one is not known (marked without `at`)."""

    async def mark_sent(self, ids: Sequence[int], message_id: int | None, at: datetime) -> None:
        """The rows were posted (as that message, when known) at `at`."""

    async def mark_retry(self, ids: Sequence[int], next_attempt: datetime, error: str) -> None:
        """The send failed: the rows are pending again, not due before `next_attempt`, with the error."""

    async def postpone_channel(self, channel_id: int, until: datetime) -> None:
        """Hold every pending row of a channel until `until` at least, so posts keep their order after a
        rate limit."""

    async def mark(self, ids: Sequence[int], status: str, error: str | None = None) -> None:
        """'summarised' (named in a "+N more" message) or 'failed' (given up, with the reason)."""

    async def fail_channel(self, channel_id: int, error: str) -> int:
        """Give up every unsent row of a channel Discord refuses (deleted, or access removed); returns how
        many."""

    async def counts(self, guild_id: int) -> dict[str, int]:
        """A server's rows per status (statuses without rows left out)."""


class ProcessLock(Protocol):
    """A lock one process of a deployment holds at a time (the poller's): held for as long as the holder lives,
    freed when it dies, whatever the cause."""

    async def try_acquire(self) -> bool:
        """True when this process holds the lock: taken now if free, or still held (checked, so a lock lost
        with a database restart is taken again when free). False while another process holds it."""

    async def release(self) -> None:
        """Free the lock, if held."""


class Store(Protocol):
    """The database: one repository per family of records, and transactions across them.

    Opened by `bot.store.open_store`; `close()` (or leaving `async with store:`) releases it."""

    @property
    def papers(self) -> PaperRepository: ...

    @property
    def sources(self) -> SourceRepository: ...

    @property
    def backfill(self) -> BackfillRepository: ...

    @property
    def topics(self) -> TopicRepository: ...

    @property
    def follows(self) -> FollowRepository: ...

    @property
    def deliveries(self) -> DeliveryRepository: ...

    @property
    def search(self) -> SearchRepository: ...

    @property
    def announcements(self) -> AnnouncementRepository: ...

    @property
    def ratings(self) -> RatingRepository: ...

    @property
    def saved(self) -> SavedRepository: ...

    @property
    def similar(self) -> SimilarRepository: ...

    def process_lock(self, name: str) -> ProcessLock:
        """The deployment-wide lock of this name (e.g. "poll": exactly one poller runs)."""
        ...

    @property
    def scorer_models(self) -> ScorerModelRepository: ...

    def transaction(self) -> AbstractAsyncContextManager[object]:
        """One write transaction across repositories (e.g. papers and the deliveries they cause): committed
        when the block ends, rolled back entirely when it raises. Nested use joins the outer one. What it
        yields belongs to the implementation: callers use the repositories inside."""
        ...

    async def close(self) -> None:
        """Release the database. The store is not used afterwards."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None:
        """Close the store."""

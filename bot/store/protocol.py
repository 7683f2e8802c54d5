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

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol, Self

from bot.models import (
    Announcement,
    BackfillWindow,
    Follow,
    MatchKind,
    Mode,
    Paper,
    PendingDelivery,
    SearchHit,
    SkippedEntry,
    SkippedSummary,
    SourceState,
    TopicRow,
    UpsertResult,
    Wanted,
)


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
    ) -> list[SearchHit]:
        """Papers passing the prefilter (and matched by the topic or one of the topics `including` adds to it,
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


class TopicRepository(Protocol):
    """Topics and their matches. Topics form a tree (`TopicRow.parent_id`, checked by the caller with
    bot.topic_tree); matches are stored for the closure: a topic holds its own query's matches and,
    marked as held through a descendant, those of its descendants of the same owner (catalog or one server)."""

    async def save(
        self, *, guild_id: int, slug: str, name: str, description: str, query: str, at: datetime
    ) -> tuple[TopicRow, bool]:
        """Insert or update a topic by (guild, slug): the catalog's way, where the slug is the identity.
        Returns it and whether its query changed or it is new; a changed query drops the recorded matches.
        Saving an unchanged topic writes nothing (the catalog is saved at every start)."""

    async def create(
        self,
        *,
        guild_id: int,
        name: str,
        description: str,
        query: str,
        at: datetime,
        parent_id: int | None = None,
    ) -> TopicRow:
        """A new topic of a server (under `parent_id`, if given), its slug the name's `topic_key`. Never
        replaces a topic: raises TopicNameTaken when the server has one whose name has the same key."""

    async def change(self, topic_id: int, *, query: str, at: datetime) -> tuple[TopicRow, bool]:
        """A new query for a topic, and whether it differs from the old one; when it does, the recorded
        matches are dropped (the caller matches the history again). Raises LookupError for an unknown id."""

    async def set_parent(self, topic_id: int, parent_id: int | None, at: datetime) -> bool:
        """Put a topic under another (None: at the top) and return whether that moved it. Matches are not
        touched (see rebuild_inherited). Raises LookupError for an unknown topic."""

    async def get(self, topic_id: int) -> TopicRow | None:
        """A topic by id; None if there is none."""

    async def own(self, guild_id: int) -> list[TopicRow]:
        """A server's own topics (CATALOG_GUILD: the catalog's), by folded name."""

    async def find(self, guild_id: int, name_or_slug: str) -> TopicRow | None:
        """The topic a server means by a name (`find_named`), its own before the catalog's, so a catalog
        topic never hides a server's own."""

    async def visible_to(self, guild_id: int) -> list[TopicRow]:
        """The catalog and the server's own topics, by folded name, without the catalog topics named like
        one of the server's own (same key)."""

    async def count_own(self, guild_id: int) -> int:
        """How many topics a server has of its own."""

    async def rekey_legacy(self) -> list[tuple[TopicRow, str]]:
        """Give topics saved before names were keyed their name's key as slug (a taken key gets "-<id>"
        appended) and return (topic, new slug) for each changed. A store that never held such topics
        returns []."""

    async def all(self) -> list[TopicRow]:
        """Every topic, catalog and servers', by id."""

    async def delete(self, topic_id: int) -> None:
        """Delete a topic with its matches and follows; its children move to the top. Idempotent."""

    async def add_matches(
        self, pairs: Sequence[tuple[int, str]], at: datetime, *, through: Sequence[tuple[int, str]] = ()
    ) -> int:
        """Record (topic id, arxiv id) matches of the topics' own queries and, from `through`, matches an
        ancestor holds through a descendant, in one transaction; return how many own matches were new.
        Idempotent: a recorded match stays as it was, except that one held through a descendant becomes the
        topic's own when its own query matches too; a pair naming a deleted topic or an unstored paper is
        dropped."""

    async def rebuild_inherited(self, topic_id: int, descendants: Sequence[int], at: datetime) -> None:
        """Make the matches a topic holds through descendants exactly the own matches of `descendants` (its
        descendants of the same owner), after one of them changed query, place or was deleted. Its own
        matches stay. One transaction; no query is evaluated."""

    async def matched_ids(self, topic_id: int) -> list[str]:
        """The arXiv ids of the topic's exact matches (own and through descendants), in no particular order:
        what its learned scorer learns from."""

    async def add_suggestions(self, pairs: Sequence[tuple[int, str]], at: datetime) -> int:
        """Record (topic id, arxiv id) pairs the topic's learned scorer suggests (kind 'suggested'); a paper
        the topic already holds stays as it is. Returns how many are new. Suggestions are the topic's own: they
        are not inherited by ancestors (each topic's scorer suggests for itself), and every reader that counts
        (`count_matches`, `counts_between`, `matched_ids`, search by topic) reads exact matches only."""

    async def replace_suggestions(self, topic_id: int, arxiv_ids: Sequence[str], at: datetime) -> int:
        """Make the topic's suggestions exactly `arxiv_ids` (exact matches stay), in one transaction; returns
        how many it holds now."""

    async def suggested_among(self, topic_ids: Sequence[int], arxiv_ids: Sequence[str]) -> set[str]:
        """Of these papers, those the topics hold only as suggestions."""

    async def count_suggested(
        self, topic_ids: Sequence[int], start: datetime, end: datetime
    ) -> dict[int, int]:
        """Each topic's suggested papers submitted (v1) in [start, end) (what /momentum shows beside its
        counts), in one round trip; a topic without any gets 0."""

    async def count_matches(self, topic_id: int, start: datetime, end: datetime) -> int:
        """The topic's matched papers submitted (v1) in [start, end)."""

    async def counts_between(
        self,
        topic_ids: Sequence[int],
        bounds: Sequence[datetime],
        *,
        including: Mapping[int, Sequence[int]] | None = None,
    ) -> dict[int, list[int]]:
        """Matches of each topic in each window between consecutive ascending `bounds` ([b0, b1), [b1, b2),
        ...), by v1 submission time, in one round trip whatever the number of topics; a topic without matches
        gets zeros. A topic's count also takes, each paper once, the papers of the topics `including` lists
        for it. Raises ValueError for fewer than two bounds."""

    async def followed_in(self, guild_id: int) -> list[TopicRow]:
        """The topics some channel of a server follows, each once, ordered by folded name."""

    async def latest_papers(
        self,
        topic_id: int,
        limit: int,
        offset: int = 0,
        *,
        including: Sequence[int] = (),
        suggested: bool = False,
    ) -> list[Paper]:
        """The topic's exact matches (with `suggested`, its suggestions too; with, each once, those of the
        topics `including` names), newest submission first, from the `offset`-th on, at most `limit`. Raises
        ValueError for a negative limit or offset."""

    async def queue_history(self, topic_ids: Sequence[int], at: datetime) -> None:
        """Remember that these topics' stored history is still to be matched (kept across restarts)."""

    async def history_queue(self) -> list[int]:
        """Topics whose history is still to be matched, oldest request first (deleted topics leave it)."""

    async def history_matched(self, topic_id: int) -> None:
        """The topic's history is matched: it leaves the queue."""

    async def count_candidates(
        self, fts: str | None, *, categories: Sequence[str] = (), since: datetime | None = None, cap: int
    ) -> int:
        """How many papers `candidates` would yield, counted up to `cap` at most (asking costs at most
        `cap` rows, however broad the prefilter)."""

    def candidates(
        self,
        fts: str | None,
        *,
        categories: Sequence[str] = (),
        since: datetime | None = None,
        batch: int = 5000,
    ) -> AsyncIterator[list[Paper]]:
        """Stored papers that may match (passing the prefilter, of any of the categories, submitted since),
        each once, in batches of at most `batch`, so a history of a million papers never sits in memory."""
        ...


class FollowRepository(Protocol):
    async def upsert(
        self,
        *,
        guild_id: int,
        channel_id: int,
        topic_id: int,
        mode: Mode,
        digest_hour: int,
        created_by: int | None,
        at: datetime,
        match: MatchKind = "exact",
    ) -> tuple[Follow, bool]:
        """Follow a topic in a channel, or change how an existing follow posts and what it receives (`match`:
        the query's matches, or also the learned scorer's suggestions), which also clears its broken mark.
        Returns the follow and whether it is new. Idempotent per (channel, topic)."""

    async def for_guild(self, guild_id: int) -> list[Follow]:
        """A server's follows, broken ones included, by topic name, then channel."""

    async def for_topics(self, topic_ids: list[int]) -> list[Follow]:
        """Working follows of any of these topics (broken ones receive nothing until fixed)."""

    async def remove(self, guild_id: int, topic_id: int, channel_id: int | None = None) -> int:
        """End a server's follows of a topic (in one channel, or in all), in one transaction; returns how
        many ended. Their pending deliveries are dropped unless another follow in the same channel still
        wants the paper."""

    async def mark_broken(self, channel_id: int, reason: str, at: datetime) -> None:
        """Every follow in the channel is broken (Discord refuses the posts) for `reason` (shortened)."""

    async def touch(self, channel_id: int, at: datetime) -> None:
        """Something was posted to the channel at `at`."""

    async def digest_channels_due(self, hour: int) -> list[int]:
        """Discord channels with a working digest follow posting at this hour (UTC)."""


class DeliveryRepository(Protocol):
    async def enqueue(self, wanted: Sequence[Wanted], at: datetime) -> None:
        """One outbox row per (channel, paper), meant for the transaction that stores the papers causing
        it; a second topic adds its name to the same row. A paper already sent to a channel is never
        queued there again; an 'each' follow upgrades a pending digest row to 'each'. Idempotent."""

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

    async def in_flight(self, *, console: bool = False) -> list[PendingDelivery]:
        """Rows claimed for sending when the process stopped ('sending'): sent or not, nobody knows yet."""

    async def mark_sending(self, ids: Sequence[int]) -> None:
        """Claim rows for a send ('sending', one attempt more), before the send."""

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

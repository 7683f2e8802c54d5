"""Domain values shared by every layer. Plain dataclasses: no I/O, no framework types."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal

# New-style ids (2202.12139) and old-style ids (astro-ph/9904306, math.GT/0309136), each with an optional version.
_ARXIV_ID = re.compile(
    r"(?P<base>(?:\d{4}\.\d{4,5})|(?:[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7}))(?:v(?P<version>\d+))?$"
)


def split_arxiv_id(text: str) -> tuple[str, int | None]:
    """Split an arXiv id, URL or OAI identifier into (base id, version or None).

    Raises ValueError when the text holds no arXiv id.
    """
    candidate = text.strip()
    for prefix in ("oai:arXiv.org:", "arXiv:", "arxiv:"):
        if candidate.startswith(prefix):
            candidate = candidate[len(prefix) :]
    if "/abs/" in candidate or "/pdf/" in candidate or "/html/" in candidate:
        candidate = re.split(r"/(?:abs|pdf|html)/", candidate, maxsplit=1)[1]
    candidate = candidate.removesuffix(".pdf").strip("/")
    match = _ARXIV_ID.search(candidate)
    if match is None or match.start() != 0:
        raise ValueError(f"not an arXiv id: {text!r}")
    version = match.group("version")
    return match.group("base"), int(version) if version else None


@dataclass(frozen=True, slots=True)
class Author:
    name: str
    affiliations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Paper:
    """One arXiv paper at one version. `arxiv_id` is the base id without version: the dedupe key."""

    arxiv_id: str
    version: int
    title: str
    abstract: str
    authors: tuple[Author, ...]
    primary_category: str
    categories: tuple[str, ...]
    published: datetime  # v1 submission time, tz-aware UTC
    updated: datetime  # time of this version, tz-aware UTC
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None
    # Authors listed beyond those kept (sources keep the first 500: see bot/sources/limits.py).
    authors_omitted: int = 0
    # A copy from an announcement feed (arXiv RSS): `published` is the announcement time, as the v1 submission
    # time is not known yet, and authors carry no affiliations. A full copy (the API's) of the same version
    # replaces it in the store, correcting the date; it never replaces a full copy of the same version.
    provisional: bool = False
    # How arXiv announced this version, when the store knows (bot.store fills it in for cards): context for
    # showing the paper, not part of it, so it takes no part in comparing papers.
    announced: Announcement | None = field(default=None, compare=False)

    @property
    def versioned_id(self) -> str:
        return f"{self.arxiv_id}v{self.version}"

    @property
    def abs_url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv_id}"

    @property
    def pdf_url(self) -> str:
        return f"https://arxiv.org/pdf/{self.arxiv_id}"

    @property
    def html_url(self) -> str:
        return f"https://arxiv.org/html/{self.arxiv_id}"

    @property
    def doi_url(self) -> str | None:
        return f"https://doi.org/{self.doi}" if self.doi else None


AnnounceKind = Literal["new", "cross", "replace", "replace-cross"]
"""How arXiv announced a paper in a category: first posted there (new), listed there from another primary
category (cross), or a new version of either (replace, replace-cross)."""

ANNOUNCE_KINDS: tuple[AnnounceKind, ...] = ("new", "cross", "replace", "replace-cross")


@dataclass(frozen=True, slots=True)
class Announcement:
    """arXiv announced version `version` of a paper in `category` on `day` (the UTC date of the feed's item)."""

    arxiv_id: str
    version: int
    category: str
    kind: AnnounceKind
    day: date

    @property
    def is_new_paper(self) -> bool:
        """new and cross announce a paper for the first time; replace and replace-cross a new version."""
        return self.kind in ("new", "cross")

    def label(self, primary: str) -> str:
        """What a card says of it, for a paper whose primary category is `primary`: "New in cs.LG",
        "Cross-listed from cs.CV", "Updated (v2)"."""
        if self.kind == "new":
            return f"New in {self.category}"
        return f"Cross-listed from {primary}" if self.kind == "cross" else f"Updated (v{self.version})"


@dataclass(frozen=True, slots=True)
class SkippedEntry:
    """An entry a source served that holds no usable paper (malformed, an absurd date or version, outside the
    asked window). `entry_id` is the id as served, shortened, or a mark when it has none."""

    entry_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class FeedPage:
    """One page of API results, with the feed-level counts that tell whether more exist."""

    papers: list[Paper]
    total_results: int
    start_index: int
    items_per_page: int
    query_title: str = ""
    skipped: tuple[SkippedEntry, ...] = ()

    @property
    def entries(self) -> int:
        """Entries served on this page, usable or not: where the next page starts."""
        return len(self.papers) + len(self.skipped)


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """What one batch upsert did: ids of papers new to the store, and ids that moved to a newer version."""

    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0


# Records the store returns. Every store implementation builds exactly these, so callers never see its rows.

Mode = Literal["each", "digest"]
"""How a follow posts: a card for each paper, or one digest a day."""

MatchKind = Literal["exact", "suggested"]
"""What a follow receives: the query's matches (exact), or also the learned scorer's suggestions."""

CATALOG_GUILD = 0
"""The guild id of the catalog's topics, which every server sees."""

HIGHLIGHT_START, HIGHLIGHT_END = "\x02", "\x03"
"""Around the matched words of a search snippet; the renderer replaces them, after escaping markdown."""


# A topic's name is compared in two ways, both blind to script: `fold_name` says two names are the same name;
# `topic_key` says two names are too close to tell apart, e.g. "Graph Theory" and "graph-theory!".


def fold_name(name: str) -> str:
    """A name as compared: NFKC, case-folded (ß = ss, Σ = σ), runs of white space as one space."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return " ".join(folded.split())


def topic_key(name: str) -> str:
    """Letters, digits and combining marks of any script, every other run of characters one hyphen: "量子"
    and "機械学習" stay apart, "Graph Theory" and "graph-theory!" meet. A name with none of those (emoji,
    symbols) keys by its folded self, so "🙂" and "🚀" stay apart too.

    Two names are the same topic name when their keys are equal: a server's own topic stores its key as slug."""
    folded = fold_name(name)
    kept = "".join(c if unicodedata.category(c)[0] in "LNM" else " " for c in folded)
    return "-".join(kept.split()) or "-".join(folded.split())


@dataclass(frozen=True, slots=True)
class TopicRow:
    """A stored topic: one of the catalog's (guild_id CATALOG_GUILD) or a server's own."""

    id: int
    guild_id: int
    slug: str
    name: str
    description: str
    query: str
    parent_id: int | None = None  # the topic it sits under: every paper of it belongs to its parent too

    @property
    def is_catalog(self) -> bool:
        return self.guild_id == CATALOG_GUILD


def find_named(topics: Iterable[TopicRow], name_or_slug: str) -> TopicRow | None:
    """The topic with exactly that name, else with that name or slug once folded, else the one whose name
    has the same key."""
    topics = list(topics)
    text = " ".join(name_or_slug.split())
    wanted, key = fold_name(text), topic_key(text)
    exact = (t for t in topics if t.name == text)
    same = (t for t in topics if wanted in (fold_name(t.name), fold_name(t.slug)))
    close = (t for t in topics if key in (topic_key(t.name), t.slug))
    return next(exact, None) or next(same, None) or next(close, None)


@dataclass(frozen=True, slots=True)
class Follow:
    """One channel of one server following one topic, and whether Discord still lets us post there."""

    id: int
    guild_id: int
    channel_id: int
    topic_id: int
    topic_name: str
    mode: Mode
    digest_hour: int
    created_at: datetime
    last_post_at: datetime | None
    broken_reason: str | None
    match: MatchKind = "exact"  # the query's matches only, or also the learned scorer's suggestions

    @property
    def broken(self) -> bool:
        return self.broken_reason is not None


@dataclass(frozen=True, slots=True)
class Wanted:
    """One follow's wish to see one paper in one channel."""

    guild_id: int
    channel_id: int
    arxiv_id: str
    mode: Mode
    topic_id: int


ReachKind = Literal["exact", "suggested", "withheld"]


@dataclass(frozen=True, slots=True)
class WorkShare:
    """The outbox's work as deliver workers share it (DeliveryRepository.share): channels with posts due (or left
    'sending'), and the workers in a round now. A worker holds at most its share of those channels, so a worker
    killed strands no more than that."""

    busy: int
    workers: int

    @property
    def channels(self) -> int:
        """The most channels one worker should hold now."""
        return -(-self.busy // max(1, self.workers))


@dataclass(frozen=True, slots=True)
class Reach:
    """Whom a paper new to the store reaches through one topic, for the outbox to join with the follows itself
    (DeliveryRepository.fan_out): the follows of `topic_id`, in server `guild_id` only when it is given. 'exact':
    each of them; 'suggested': those that asked for the learned scorer's suggestions; 'withheld': none of that
    server's, whatever else reaches them (its ratings keep the paper out of its follows of the topic)."""

    topic_id: int
    guild_id: int | None
    arxiv_id: str
    kind: ReachKind


@dataclass(frozen=True, slots=True)
class PendingDelivery:
    """One row of the delivery outbox: a paper for a channel, with the followed topics it matched."""

    id: int
    guild_id: int
    channel_id: int
    mode: Mode
    status: str  # pending, sending, sent, summarised or failed
    attempts: int
    paper: Paper
    topics: tuple[str, ...]  # names of the followed topics it matched, in name order
    suggested: bool = False  # only the learned scorer put it there (a follow with match: suggested)


@dataclass(frozen=True, slots=True)
class SkippedSummary:
    """Distinct entries a source (a poll, a backfill job) skipped, and the one it skipped first most recently."""

    source: str
    entries: int
    latest: SkippedEntry
    latest_at: datetime


@dataclass(frozen=True, slots=True)
class SourceState:
    """Where a polled source stands: watermark, HTTP validators and health."""

    source: str
    watermark: datetime | None = None
    etag: str | None = None
    last_modified: str | None = None
    last_attempt: datetime | None = None
    last_success: datetime | None = None
    last_error: str | None = None
    consecutive_failures: int = 0
    papers_stored: int = 0
    skipped: SkippedSummary | None = None  # entries it served that held no usable paper, if any


@dataclass(frozen=True, slots=True)
class BackfillWindow:
    """One window of a backfill job and whether it is stored."""

    start: datetime
    end: datetime  # inclusive, minute precision
    done: bool
    papers: int


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A paper found by full-text search, with an abstract excerpt around the words that matched."""

    paper: Paper
    snippet: str  # matches between HIGHLIGHT_START and HIGHLIGHT_END


Vote = Literal[-1, 1]  # 👎 / 👍: does the paper belong in the topic?


@dataclass(frozen=True, slots=True)
class RatedPaper:
    """A paper a server's members rated for one of its topics, their votes summed per direction."""

    arxiv_id: str
    title: str
    up: int
    down: int
    last_rated: datetime

    @property
    def net(self) -> int:
        """Positive: the members who rated it say it belongs, on balance; negative: that it does not."""
        return self.up - self.down


@dataclass(frozen=True, slots=True)
class SavedPaper:
    """A paper on a member's reading list."""

    paper: Paper
    saved_at: datetime

"""Domain values shared by every layer. Plain dataclasses: no I/O, no framework types."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

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

"""RSS/Atom feeds with feedparser: arXiv's daily announcement feeds, and any other RSS/Atom feed.

arXiv feeds (`https://rss.arxiv.org/rss/<cat>+<cat>`) list what was announced today, one item per paper,
each tagged new | cross | replace | replace-cross. feedparser is used for its tolerance of broken feeds; the
arXiv description is plain text (LaTeX included), so it is read with feedparser's HTML sanitising and URI
resolution turned off: they would treat bra-ket notation such as `<psi|phi>` as a tag and eat it.

Fetches go through the shared PoliteHttp (arXiv's etiquette covers RSS too) with conditional GET.
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from itertools import islice
from typing import Any, Literal, TypeVar, get_args

import feedparser

from bot.errors import MalformedFeed, SourceError
from bot.models import Author, Paper, SkippedEntry, split_arxiv_id
from bot.sources import limits
from bot.sources.polite_http import Fetched, PoliteHttp, Retryable

log = logging.getLogger(__name__)
T = TypeVar("T")

AnnounceType = Literal["new", "cross", "replace", "replace-cross", "unknown"]
_ANNOUNCE_TYPES: frozenset[str] = frozenset(get_args(AnnounceType))
_NEW_PAPER_TYPES = frozenset({"new", "cross"})

_DESCRIPTION_ID = re.compile(r"^\s*arXiv:(\S+)")
_DESCRIPTION_TYPE = re.compile(r"Announce Type:\s*([\w-]+)")
# Name suffixes that arrive as their own comma-separated piece: "John Smith, Jr." is one author.
_NAME_SUFFIX = re.compile(r"^(?:Jr|Sr|II|III|IV)\.?$")
_CLOSED_ROOT = re.compile(rb"</(?:[\w.-]+:)?(?:rss|feed|RDF)>\s*\Z")
# dc:creator text read at most: room for every kept author (bot/sources/limits.py) and the separators.
_CREATOR_CHARS = limits.AUTHORS * (limits.AUTHOR_NAME + 2)
_ITEM_LABEL = 100  # characters of a skipped item's id kept for logs and /status


@dataclass(frozen=True, slots=True)
class FeedItem:
    paper: Paper
    announce_type: AnnounceType

    @property
    def is_new_paper(self) -> bool:
        """new and cross items are papers announced for the first time; replace* are new versions."""
        return self.announce_type in _NEW_PAPER_TYPES


@dataclass(frozen=True, slots=True)
class FeedResult:
    items: list[FeedItem]
    not_modified: bool  # a 304: nothing changed since the validators we sent
    etag: str | None  # validators to send next time (the old ones are kept on a 304)
    last_modified: str | None
    build_date: datetime | None  # channel lastBuildDate (UTC), None if absent
    skipped: tuple[SkippedEntry, ...] = ()  # items that held no usable paper


@dataclass(frozen=True, slots=True)
class GenericEntry:
    """One entry of any RSS/Atom feed (a journal, a blog), as plain text."""

    id: str
    title: str
    link: str
    summary: str
    authors: tuple[str, ...]
    published: datetime | None


def rss_url(base: str, categories: Sequence[str]) -> str:
    """The arXiv RSS URL for several categories at once, e.g. `.../rss/cs.LG+stat.ML`."""
    if not categories:
        raise ValueError("an RSS feed needs at least one category")
    return f"{base.rstrip('/')}/{'+'.join(categories)}"


# ---------------------------------------------------------------------------------------------- text helpers


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _to_utc(parsed: time.struct_time | None) -> datetime | None:
    # feedparser already converts dates to UTC struct_time
    return datetime(*parsed[:6], tzinfo=UTC) if parsed else None


def _split_top_level(text: str) -> list[str]:
    """Split on "," and " and " outside parentheses (affiliations hold commas and "and" too)."""
    parts: list[str] = []
    depth = start = i = 0
    while i < len(text):
        char = text[i]
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and char == ",":
            parts.append(text[start:i])
            start = i + 1
        elif depth == 0 and text.startswith(" and ", i):
            parts.append(text[start:i])
            start = i + len(" and ")
            i = start - 1
        i += 1
    parts.append(text[start:])
    return parts


def _without_parentheticals(text: str) -> str:
    kept: list[str] = []
    depth = 0
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]" and depth:
            depth -= 1
        elif depth == 0:
            kept.append(char)
    return _norm("".join(kept))


def split_authors(creator: str) -> list[str]:
    """Author names from arXiv's one comma-joined `dc:creator` string.

    Splits on ", ", " and " and ", and "; drops parenthesised affiliations (whose commas are not name
    separators); keeps suffixes such as "Jr." with the name before them.
    """
    names: list[str] = []
    for piece in _split_top_level(_norm(creator)):
        name = _without_parentheticals(piece)
        name = name.removeprefix("and ").strip()  # the Oxford comma: "A, B, and C"
        if not name:
            continue
        if names and _NAME_SUFFIX.match(name):
            names[-1] = f"{names[-1]} {name}"
        else:
            names.append(name)
    return names


class _TextExtractor(HTMLParser):
    """HTML -> text; tags become spaces so "<p>a</p><p>b</p>" does not read "ab"."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        self.chunks.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        self.chunks.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.chunks.append(data)


def html_to_text(html: str) -> str:
    extractor = _TextExtractor()
    extractor.feed(html)
    extractor.close()
    return _norm("".join(extractor.chunks))


# ----------------------------------------------------------------------------------------------- feedparser


def _feedparse(data: bytes, *, content_type: str | None, plain_text: bool) -> Any:
    """Run feedparser; raise MalformedFeed when the body is no feed, or a feed cut off before its end.

    Malformed but complete feeds (a stray `&`, an HTML entity) are tolerated: that is feedparser's job here.
    A cut-off feed is not, though feedparser reads its first entries: accepting them would store the
    validators of a partial batch, and the next conditional GET would hide the rest for good.
    """
    headers = {"content-type": content_type} if content_type else None
    # BytesIO: given raw bytes, feedparser would first try them as a local file name.
    parsed = feedparser.parse(
        io.BytesIO(data),
        response_headers=headers,
        sanitize_html=not plain_text,
        resolve_relative_uris=not plain_text,
    )
    problem = parsed.get("bozo_exception")
    if not parsed.entries and (parsed.get("bozo") or not parsed.get("version")):
        raise MalformedFeed(f"the feed could not be read ({problem or 'not an RSS or Atom feed'})")
    if parsed.get("bozo") and not _CLOSED_ROOT.search(data[-256:]):
        raise MalformedFeed(f"the feed ends before its closing tag ({problem}): the download was cut off")
    if parsed.get("bozo"):
        log.warning("feed is malformed but complete (%s); using its %d entries", problem, len(parsed.entries))
    return parsed


def _as_text(value: str, detail: Mapping[str, Any] | None) -> str:
    """A feedparser text value as plain text, stripping markup only when the feed declared it HTML."""
    if "html" in ((detail or {}).get("type") or ""):
        return html_to_text(value)
    return _norm(value)


# --------------------------------------------------------------------------------------------- arXiv items


def _arxiv_id(entry: Mapping[str, Any]) -> tuple[str, int]:
    """Base id and version from the guid, the description prefix or the link (first with a version wins)."""
    description_id = _DESCRIPTION_ID.match(entry.get("summary") or "")
    candidates = [
        entry.get("id") or "",
        description_id.group(1) if description_id else "",
        entry.get("link") or "",
    ]
    found: list[tuple[str, int | None]] = []
    for candidate in filter(None, candidates):
        if len(candidate) > limits.ID_TEXT:
            continue  # no arXiv id is that long (and a long text makes the id pattern slow)
        try:
            found.append(split_arxiv_id(candidate))
        except ValueError:
            continue
    if not found:
        raise ValueError("no arXiv id in guid, description or link")
    base, version = next((f for f in found if f[1] is not None), found[0])
    return base, version or 1


def _announce_type(entry: Mapping[str, Any]) -> AnnounceType:
    value = (entry.get("arxiv_announce_type") or "").strip().lower()
    if not value:
        in_description = _DESCRIPTION_TYPE.search(entry.get("summary") or "")
        value = in_description.group(1).lower() if in_description else ""
    return value if value in _ANNOUNCE_TYPES else "unknown"  # type: ignore[return-value]


def _abstract(description: str) -> str:
    _, marker, after = description.partition("Abstract:")
    if marker:
        return _norm(after)
    # No marker: drop the "arXiv:<id> Announce Type: <type>" header if it is there.
    return _norm(re.sub(r"^\s*arXiv:\S+\s+Announce Type:\s*[\w-]+", "", description))


def _category(term: object) -> str:
    """A category name without whitespace (categories are stored space-joined), or "" if it is none."""
    name = "".join(str(term or "")[: limits.CATEGORY + 1].split())
    return name if len(name) <= limits.CATEGORY else ""


def _categories(entry: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(primary, all): the first <category> is the primary unless the feed names one explicitly."""
    tags = islice(entry.get("tags") or [], limits.CATEGORIES * 4)
    terms = tuple(dict.fromkeys(filter(None, (_category(t.get("term")) for t in tags))))[: limits.CATEGORIES]
    named = entry.get("arxiv_primary_category")
    primary = _category(named.get("term") if isinstance(named, Mapping) else named)
    if not primary:
        return (terms[0] if terms else ""), terms
    return primary, (primary, *(t for t in terms if t != primary))[: limits.CATEGORIES]


def _authors(entry: Mapping[str, Any]) -> tuple[tuple[Author, ...], int]:
    """The first AUTHORS authors (names bounded) and how many more the item lists."""
    raw = [a.get("name") or "" for a in entry.get("authors") or []] or [entry.get("author") or ""]
    names = [name for text in raw for name in split_authors(text[:_CREATOR_CHARS])]
    kept = tuple(Author(limits.clip(name, limits.AUTHOR_NAME)) for name in names[: limits.AUTHORS])
    return kept, max(0, len(names) - limits.AUTHORS)


def _doi(entry: Mapping[str, Any]) -> str | None:
    # arXiv allows several DOIs separated by spaces; the first is the one a link can use.
    tokens = (entry.get("arxiv_doi") or "")[: limits.DOI * 4].split()
    return limits.clip(tokens[0], limits.DOI) if tokens else None


def _arxiv_item(entry: Mapping[str, Any], fallback_date: datetime | None) -> FeedItem:
    arxiv_id, version = _arxiv_id(entry)
    if version > limits.VERSION:
        raise ValueError(f"version v{version} is not a real arXiv version")
    description = entry.get("summary") or ""
    announced = _to_utc(entry.get("published_parsed") or entry.get("updated_parsed")) or fallback_date
    if announced is None:
        raise ValueError("no announcement date in the item or the feed")
    if not limits.EARLIEST <= announced < limits.LATEST:
        raise ValueError(f"announced {announced:%Y-%m-%d}, which is no date of an arXiv paper")
    primary, categories = _categories(entry)
    if not primary:
        raise ValueError("no category")
    authors, omitted = _authors(entry)
    paper = Paper(
        arxiv_id=arxiv_id,
        version=version,
        title=limits.clip(entry.get("title"), limits.TITLE),
        abstract=limits.clip(_abstract(description[: limits.ABSTRACT * 4]), limits.ABSTRACT),
        authors=authors,
        primary_category=primary,
        categories=categories,
        published=announced,
        updated=announced,
        journal_ref=limits.clip(entry.get("arxiv_journal_reference"), limits.JOURNAL_REF) or None,
        doi=_doi(entry),
        authors_omitted=omitted,
        provisional=True,  # dated by its announcement; the API's copy brings the submission time
    )
    return FeedItem(paper, _announce_type(entry))


def _item_label(entry: Mapping[str, Any]) -> str:
    """How logs and /status name a skipped item: its guid (or link, or title), shortened."""
    text = _norm(str(entry.get("id") or entry.get("link") or entry.get("title") or "")[: _ITEM_LABEL * 2])
    text = text.removeprefix("oai:arXiv.org:") or "(an item without an id)"
    return text if len(text) <= _ITEM_LABEL else text[: _ITEM_LABEL - 1] + "…"


def _parse_arxiv(
    data: bytes, *, announced: datetime | None = None, content_type: str | None = None
) -> tuple[list[FeedItem], datetime | None, list[SkippedEntry]]:
    parsed = _feedparse(data, content_type=content_type, plain_text=True)
    build_date = _to_utc(parsed.feed.get("updated_parsed"))
    fallback = announced or _to_utc(parsed.feed.get("published_parsed")) or build_date
    items: list[FeedItem] = []
    skipped: list[SkippedEntry] = []
    for entry in parsed.entries:
        try:
            items.append(_arxiv_item(entry, fallback))
        except ValueError as exc:  # one odd item must not cost the rest of the day's papers
            skipped.append(SkippedEntry(_item_label(entry), str(exc)))
    return items, build_date, skipped


def parse_arxiv_feed(data: bytes, *, announced: datetime | None = None) -> list[FeedItem]:
    """The items of an arXiv RSS (or Atom) announcement feed.

    RSS carries no submission date: `published` and `updated` of each Paper are the item's pubDate, the
    announcement date (UTC), and the Paper is `provisional`. Items without one use `announced`, else the
    channel's pubDate/lastBuildDate. Titles and abstracts are whitespace-normalised; LaTeX is kept as written.
    Authors carry no affiliations. Every field is bounded (bot/sources/limits.py); an item without a usable id,
    date or category is skipped.
    Raises MalformedFeed when the body is not a readable feed.
    """
    items, _, skipped = _parse_arxiv(data, announced=announced)
    for entry in skipped:
        log.warning("skipping arXiv feed item %s: %s", entry.entry_id, entry.reason)
    return items


# ------------------------------------------------------------------------------------------- generic feeds


def _generic_entry(entry: Mapping[str, Any]) -> GenericEntry | None:
    link = entry.get("link") or ""
    title = _as_text(entry.get("title") or "", entry.get("title_detail"))
    entry_id = entry.get("id") or link or title
    if not entry_id:
        return None
    # feedparser copies an Atom <content> into `summary` without a summary_detail: its type is the content's
    detail = entry.get("summary_detail") or next(iter(entry.get("content") or []), None)
    summary = _as_text(entry.get("summary") or (detail or {}).get("value") or "", detail)
    authors = tuple(n for n in (_norm(a.get("name")) for a in entry.get("authors") or []) if n)
    published = _to_utc(entry.get("published_parsed") or entry.get("updated_parsed"))
    return GenericEntry(entry_id, title, link, summary, authors, published)


def _parse_generic(data: bytes, *, content_type: str | None = None) -> list[GenericEntry]:
    parsed = _feedparse(data, content_type=content_type, plain_text=False)
    return [e for e in map(_generic_entry, parsed.entries) if e is not None]


def parse_generic_feed(data: bytes) -> list[GenericEntry]:
    """Entries of any RSS/Atom feed as plain text (HTML summaries are sanitised, then stripped of tags).

    Author names are kept as the feed gives them. Raises MalformedFeed when the body is not a readable feed.
    """
    return _parse_generic(data)


# ------------------------------------------------------------------------------------------------ fetching


def _header(headers: Mapping[str, str], name: str) -> str | None:
    name = name.lower()
    return next((v for k, v in headers.items() if k.lower() == name), None)


def _conditional_headers(etag: str | None, last_modified: str | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    return headers


class FeedReader:
    def __init__(self, http: PoliteHttp) -> None:
        self._http = http

    async def _fetch(
        self,
        url: str,
        etag: str | None,
        last_modified: str | None,
        parse_body: Callable[[bytes, str | None], T],
        what: str,
    ) -> tuple[T | None, bool, str | None, str | None]:
        """Conditional GET: (parsed body or None on a 304, not_modified, etag, last_modified)."""

        async def parse(fetched: Fetched) -> tuple[T | None, bool, str | None, str | None]:
            new_etag = _header(fetched.headers, "etag")
            new_modified = _header(fetched.headers, "last-modified")
            if fetched.status == 304:
                return None, True, new_etag or etag, new_modified or last_modified
            if not 200 <= fetched.status < 300:
                raise SourceError(f"{what} answered HTTP {fetched.status}; check the feed address")
            content_type = _header(fetched.headers, "content-type")
            try:
                # feedparser is pure Python: parse off the event loop so the bot keeps its heartbeat
                body = await asyncio.to_thread(parse_body, fetched.content, content_type)
            except MalformedFeed as exc:
                raise Retryable(str(exc)) from exc
            return body, False, new_etag, new_modified

        return await self._http.get(url, parse, headers=_conditional_headers(etag, last_modified), what=what)

    async def fetch_arxiv(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> FeedResult:
        """Today's arXiv announcements. A 304 gives no items and keeps the validators.

        Raises ArxivUnavailable after retries (including a body that stays unreadable) and SourceError on
        other HTTP errors.
        """
        parsed, not_modified, new_etag, new_modified = await self._fetch(
            url,
            etag,
            last_modified,
            lambda data, ctype: _parse_arxiv(data, content_type=ctype),
            f"arXiv RSS {url}",
        )
        items, build_date, skipped = parsed if parsed is not None else ([], None, [])
        return FeedResult(items, not_modified, new_etag, new_modified, build_date, tuple(skipped))

    async def fetch_generic(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> tuple[list[GenericEntry], bool, str | None, str | None]:
        """(entries, not_modified, etag, last_modified) of any RSS/Atom feed; a 304 gives no entries."""
        entries, not_modified, new_etag, new_modified = await self._fetch(
            url,
            etag,
            last_modified,
            lambda data, ctype: _parse_generic(data, content_type=ctype),
            f"feed {url}",
        )
        return entries or [], not_modified, new_etag, new_modified

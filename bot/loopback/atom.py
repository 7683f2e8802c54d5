"""Render Papers as arXiv API Atom, shaped like the current (post 2025-11-11) backend's pages.

Element order, namespaces and links follow the recorded fixture api_query_testing_100.xml, so whatever
reads real pages reads these too. Built with lxml so every character is escaped correctly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from lxml import etree

from bot.models import Paper
from bot.sources.arxiv_api import ARXIV_NS, ATOM_NS, OPENSEARCH_NS

_NSMAP = {None: ATOM_NS, "arxiv": ARXIV_NS, "opensearch": OPENSEARCH_NS}
_FEED_UPDATED = datetime(2026, 11, 20, 0, 0, tzinfo=UTC)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _add(parent: etree._Element, ns: str, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    element = etree.SubElement(parent, f"{{{ns}}}{tag}", attrs)
    if text is not None:
        element.text = text
    return element


def _feed(title: str, *, total: int, start: int, items_per_page: int) -> etree._Element:
    feed = etree.Element(f"{{{ATOM_NS}}}feed", nsmap=_NSMAP)
    _add(feed, ATOM_NS, "id", "https://arxiv.org/api/fake-feed-id")
    _add(feed, ATOM_NS, "title", title)
    _add(feed, ATOM_NS, "updated", _stamp(_FEED_UPDATED))
    _add(feed, ATOM_NS, "link", href="https://arxiv.org/api/query", type="application/atom+xml")
    _add(feed, OPENSEARCH_NS, "itemsPerPage", str(items_per_page))
    _add(feed, OPENSEARCH_NS, "totalResults", str(total))
    _add(feed, OPENSEARCH_NS, "startIndex", str(start))
    return feed


@dataclass(frozen=True, slots=True)
class RawEntry:
    """An entry served exactly as written: what arXiv's schema allows but no Paper can hold (a year-9999 date,
    a 20-digit version, a missing id). LoopbackArxiv files it under `published` when filtering and sorting by
    submission date (None: it matches every date range and sorts newest), and under `categories`."""

    xml: str
    published: datetime | None = None
    categories: tuple[str, ...] = ("cs.LG", "cs.AI")


# Element names `entry_xml` can rewrite, by the name tests use.
_RAW_FIELDS = {
    "id": (ATOM_NS, "id"),
    "title": (ATOM_NS, "title"),
    "summary": (ATOM_NS, "summary"),
    "published": (ATOM_NS, "published"),
    "updated": (ATOM_NS, "updated"),
    "comment": (ARXIV_NS, "comment"),
    "journal_ref": (ARXIV_NS, "journal_ref"),
    "doi": (ARXIV_NS, "doi"),
}


def entry_xml(paper: Paper, **raw: str | None) -> str:
    """The entry of `paper` as XML text, with the text of the named elements (id, title, summary, published,
    updated, comment, journal_ref, doi) replaced; None removes the element."""
    holder = etree.Element(f"{{{ATOM_NS}}}feed", nsmap=_NSMAP)
    _entry(holder, paper)
    [entry] = holder
    for name, text in raw.items():
        ns, tag = _RAW_FIELDS[name]
        found = entry.find(f"{{{ns}}}{tag}")
        if found is None:
            found = _add(entry, ns, tag)
        if text is None:
            entry.remove(found)
        else:
            found.text = text
    return etree.tostring(entry, encoding="unicode")


def _raw_entry(feed: etree._Element, raw: RawEntry) -> None:
    feed.append(etree.fromstring(raw.xml))


def _entry(feed: etree._Element, paper: Paper) -> None:
    entry = _add(feed, ATOM_NS, "entry")
    _add(entry, ATOM_NS, "id", f"http://arxiv.org/abs/{paper.versioned_id}")
    _add(entry, ATOM_NS, "title", paper.title)
    _add(entry, ATOM_NS, "updated", _stamp(paper.updated))
    _add(
        entry,
        ATOM_NS,
        "link",
        href=f"https://arxiv.org/abs/{paper.versioned_id}",
        rel="alternate",
        type="text/html",
    )
    _add(
        entry,
        ATOM_NS,
        "link",
        href=f"https://arxiv.org/pdf/{paper.versioned_id}",
        rel="related",
        type="application/pdf",
        title="pdf",
    )
    _add(entry, ATOM_NS, "summary", paper.abstract)
    for category in paper.categories:
        _add(entry, ATOM_NS, "category", term=category, scheme=ARXIV_NS)
    _add(entry, ATOM_NS, "published", _stamp(paper.published))
    if paper.comment is not None:
        _add(entry, ARXIV_NS, "comment", paper.comment)
    _add(entry, ARXIV_NS, "primary_category", term=paper.primary_category)
    if paper.journal_ref is not None:
        _add(entry, ARXIV_NS, "journal_ref", paper.journal_ref)
    for author in paper.authors:
        element = _add(entry, ATOM_NS, "author")
        _add(element, ATOM_NS, "name", author.name)
        for affiliation in author.affiliations:
            _add(element, ARXIV_NS, "affiliation", affiliation)
    if paper.doi is not None:
        _add(entry, ARXIV_NS, "doi", paper.doi)
        _add(entry, ATOM_NS, "link", rel="related", href=f"https://doi.org/{paper.doi}", title="doi")


def _serialise(feed: etree._Element) -> bytes:
    return etree.tostring(feed, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def atom_feed(
    papers: Sequence[Paper | RawEntry],
    *,
    total: int,
    start: int,
    title: str = "arXiv Query",
    items_per_page: int | None = None,
) -> bytes:
    """A page of results. `items_per_page` defaults to the number of papers (arXiv echoes max_results)."""
    feed = _feed(
        title,
        total=total,
        start=start,
        items_per_page=len(papers) if items_per_page is None else items_per_page,
    )
    for paper in papers:
        if isinstance(paper, RawEntry):
            _raw_entry(feed, paper)
        else:
            _entry(feed, paper)
    return _serialise(feed)


def error_feed(message: str) -> bytes:
    """arXiv's error answer: a feed with one entry titled Error whose id is under /api/errors."""
    feed = _feed("arXiv Query: error", total=1, start=0, items_per_page=1)
    entry = _add(feed, ATOM_NS, "entry")
    anchor = "_".join(message.split())
    _add(entry, ATOM_NS, "id", f"http://arxiv.org/api/errors#{anchor}")
    _add(entry, ATOM_NS, "title", "Error")
    _add(entry, ATOM_NS, "summary", message)
    _add(entry, ATOM_NS, "updated", _stamp(_FEED_UPDATED))
    _add(
        entry,
        ATOM_NS,
        "link",
        href=f"http://arxiv.org/api/errors#{anchor}",
        rel="alternate",
        type="text/html",
    )
    author = _add(entry, ATOM_NS, "author")
    _add(author, ATOM_NS, "name", "arXiv api core")
    return _serialise(feed)

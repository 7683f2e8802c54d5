"""The demo's corpus: 100 real arXiv entries (package data), with their dates moved to look current.

The recorded entries span 2001 to 2026. The demo moves time so the newest entry was submitted an hour before
the demo starts, and compresses it so each year of the corpus becomes one week: the last twelve weeks the
momentum chart shows hold the last twelve years of papers on "testing", in their true order and spacing.
Every other field is served exactly as arXiv recorded it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources

from lxml import etree

from bot.models import Paper, split_arxiv_id
from bot.sources.arxiv_api import ATOM_NS, parse_feed

CORPUS_FILE = "arxiv_testing_100.xml"
YEAR = timedelta(days=365.25)
YEAR_BECOMES = timedelta(weeks=1)
NEWEST_AGE = timedelta(hours=1)

_ENTRY = f"{{{ATOM_NS}}}entry"
_ID = f"{{{ATOM_NS}}}id"
_PUBLISHED = f"{{{ATOM_NS}}}published"
_UPDATED = f"{{{ATOM_NS}}}updated"


@dataclass(frozen=True, slots=True)
class Entry:
    paper: Paper  # as the client will read it, dates moved
    element: etree._Element  # the recorded <entry>, its <published> and <updated> moved the same way


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def corpus_bytes() -> bytes:
    return resources.files("bot.demo").joinpath(CORPUS_FILE).read_bytes()


def load_corpus(now: datetime) -> list[Entry]:
    """The corpus's entries with dates moved relative to `now`, oldest first."""
    data = corpus_bytes()
    papers = {p.arxiv_id: p for p in parse_feed(data).papers}
    # Our own packaged file, still read with a parser that resolves nothing and fetches nothing.
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    root = etree.fromstring(data, parser)
    newest = max(p.published for p in papers.values())
    scale = YEAR_BECOMES / YEAR

    def move(moment: datetime) -> datetime:
        return now - NEWEST_AGE - (newest - moment) * scale

    entries = []
    for element in root.iter(_ENTRY):
        arxiv_id, _ = split_arxiv_id(element.findtext(_ID) or "")
        paper = papers[arxiv_id]
        published = move(paper.published)
        updated = min(max(move(paper.updated), published), now - NEWEST_AGE)
        for tag, moment in ((_PUBLISHED, published), (_UPDATED, updated)):
            node = element.find(tag)
            if node is not None:
                node.text = _stamp(moment)
        entries.append(Entry(dataclasses.replace(paper, published=published, updated=updated), element))
    entries.sort(key=lambda e: e.paper.published)
    return entries


def days_spanned(entries: Sequence[Entry], now: datetime) -> int:
    """Whole days from the oldest moved entry to `now`: a backfill of that many days stores them all."""
    return (now - entries[0].paper.published).days + 1

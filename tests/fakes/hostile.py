"""arXiv entries that hold no usable paper, each breaking one thing: every one must be skipped, never fatal."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from bot.loopback.atom import RawEntry, entry_xml
from bot.models import Paper
from tests.factories import make_paper

HOSTILE_ENTRIES: dict[str, dict[str, str | None]] = {
    "a year-9999 date past the end of time in UTC": {
        "published": "9999-12-31T23:59:59-05:00",
        "updated": "9999-12-31T23:59:59-05:00",
    },
    "a year-1 date before the start of time in UTC": {
        "published": "0001-01-01T00:00:00+05:00",
        "updated": "0001-01-01T00:00:00+05:00",
    },
    "a date from before arXiv": {"published": "1700-01-01T00:00:00Z", "updated": "1700-01-01T00:00:00Z"},
    "dates that are not dates": {"published": "yesterday", "updated": "2026-13-45T99:99:99Z"},
    "a version past SQLite's integer": {"id": "http://arxiv.org/abs/2611.10999v99999999999999999999"},
    "no id": {"id": None},
    "an id that is no arXiv id": {"id": "http://example.org/" + "a" * 100_000},
    "no category": {},  # its categories are removed by hostile_entry
}
HOSTILE_ID = "2611.10999"  # the id of every hostile entry that has one


def hostile_entry(case: str, published: datetime | None = None) -> RawEntry:
    """The HOSTILE_ENTRIES case as an entry, filed by LoopbackArxiv under `published` (None: in every range)."""
    xml = entry_xml(_hostile_base(), **HOSTILE_ENTRIES[case])
    if case == "no category":
        xml = re.sub(r"<(arxiv:primary_category|category) [^>]*/>", "", xml)
    return RawEntry(xml, published)


def _hostile_base() -> Paper:
    return make_paper(
        arxiv_id=HOSTILE_ID,
        title="A hostile entry",
        abstract="Nothing to see.",
        authors=(),
        published=datetime(2026, 11, 1, tzinfo=UTC),
    )

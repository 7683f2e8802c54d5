"""Bounds on every field of a Paper, applied by the parser before anything else reads the text.

Why: a page is text from the network. One hostile entry (a 50,000-character author name, a million authors, a
megabyte title) would otherwise cost seconds in every later step: storing, full-text indexing, topic matching,
LaTeX conversion, rendering at every /latest and /search. With these bounds each step costs what an ordinary
paper costs. Each bound is far above what arXiv itself accepts (an abstract holds at most 1,920 characters;
titles, names and comments a few hundred), so no real entry is ever cut. Large collaborations do list thousands
of authors: the first AUTHORS are kept and the rest counted (Paper.authors_omitted).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

TITLE: Final = 1_000
ABSTRACT: Final = 5_000
COMMENT: Final = 2_000
JOURNAL_REF: Final = 1_000
DOI: Final = 300
AUTHOR_NAME: Final = 300
AFFILIATIONS: Final = 10  # per author
AFFILIATION: Final = 500
AUTHORS: Final = 500
CATEGORIES: Final = 50
CATEGORY: Final = 40  # longer is no category; such a term is dropped, not cut
ID_TEXT: Final = 200  # an <id> longer than this holds no arXiv id (and a long one makes the id regex slow)
TIMESTAMP_TEXT: Final = 64
VERSION: Final = 10_000  # real versions stay below 100; SQLite's integer ends at 2**63 - 1
# Submission and update times outside these are not dates of an arXiv paper (arXiv opened in August 1991); the
# upper end is far from datetime's own end, so date arithmetic on a stored paper can never overflow.
EARLIEST: Final = datetime(1991, 1, 1, tzinfo=UTC)
LATEST: Final = datetime(3000, 1, 1, tzinfo=UTC)

ELLIPSIS: Final = "…"
# Whitespace is collapsed after the raw text is cut, so the cut leaves room for hard-wrapped text.
_RAW_FACTOR: Final = 4


def clip(text: str | None, limit: int) -> str:
    """Whitespace runs collapsed, then cut to at most `limit` characters, an ellipsis marking a cut. The raw
    text is cut first, so the work done is bounded by the limit, not by the input."""
    if not text:
        return ""
    raw = text[: limit * _RAW_FACTOR]
    clean = " ".join(raw.split())
    if len(raw) == len(text) and len(clean) <= limit:
        return clean
    return clean[: limit - 1] + ELLIPSIS

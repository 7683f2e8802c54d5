"""TopicQuery, the one public object of a parsed query: what the bot, the matcher and the history scans call.

It hides the tree behind the three readers a topic has (local matching, the FTS5 prefilter, the arXiv API)
plus the matcher's index keys and category bound, and caches what is computed once per topic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from bot.models import Paper
from bot.topics.query._nodes import Node, Predicate
from bot.topics.query._paper_text import PaperText
from bot.topics.query._parser import MAX_QUERY_LENGTH, parse


def parse_query(text: str, *, max_length: int = MAX_QUERY_LENGTH) -> TopicQuery:
    """Parse a topic query of at most `max_length` characters; raises QuerySyntaxError with the position and
    what was expected there."""
    return TopicQuery(text, max_length)


@dataclass(frozen=True)
class TopicQuery:
    """A parsed topic query. `TopicQuery(text)` parses like `parse_query(text)`; equal when texts are."""

    text: str
    max_length: int = field(default=MAX_QUERY_LENGTH, repr=False, compare=False)  # checked when parsed
    _root: Node = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_root", parse(self.text, self.max_length))

    def matches(self, paper: Paper | PaperText) -> bool:
        text = paper if isinstance(paper, PaperText) else PaperText.of(paper)
        return self.predicate(text)

    @cached_property
    def predicate(self) -> Predicate:
        """The compiled evaluator over a PaperText (what `matches` runs); the matcher calls it directly."""
        return self._root.compile()

    def to_fts5(self) -> str | None:
        """FTS5 MATCH expression over papers_fts that every match satisfies; None = no safe prefilter."""
        return self._fts

    @cached_property
    def _fts(self) -> str | None:
        return self._root.fts()

    def to_arxiv(self) -> str:
        """The query for arXiv's search_query parameter: explicit fields, parenthesised, ANDNOT."""
        return self._root.arxiv()

    def categories(self) -> frozenset[str]:
        """Categories (casefolded) of which every matching paper has at least one: a filter for history scans
        and the denominator of the topic's share. Empty when the query does not bind the category (`cat:cs.CL
        OR ti:x`, a negated or a prefix cat: term)."""
        return self._root.required_categories() or frozenset()

    def index_keys(self) -> frozenset[str] | None:
        """Keys (see PaperText.keys) of which every matching paper holds one; None = always evaluate."""
        return self._keys

    @cached_property
    def _keys(self) -> frozenset[str] | None:
        return self._root.keys()

"""The parsed query tree: the Node interface of its back ends, and the boolean nodes (AND, OR, NOT).

Every node answers the same five questions, so one tree serves all readers of a query: `compile` (a closure
deciding a paper locally), `fts` (an FTS5 prefilter that may widen but never drop), `arxiv` (the arXiv API's
syntax), `keys` (the matcher's index keys) and `required_categories`. The leaves are in `_terms`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bot.topics.query._paper_text import PaperText

Predicate = Callable[[PaperText], bool]


class Node:
    """A node of a parsed query; `pos` is its offset in the query text."""

    pos: int = 0

    def compile(self) -> Predicate:
        """A closure deciding the node on a PaperText: built once, run for every paper (hence no methods)."""
        raise NotImplementedError

    def fts(self) -> str | None:
        """FTS5 expression that every matching paper satisfies; None means "no constraint"."""
        raise NotImplementedError

    def arxiv(self) -> str:
        raise NotImplementedError

    def keys(self) -> frozenset[str] | None:
        """Index keys of which every matching paper holds at least one; None when there are none."""
        raise NotImplementedError

    def required_categories(self) -> frozenset[str] | None:
        """Categories (casefolded) of which every matching paper has at least one; None = no such bound."""
        return None

    def walk(self) -> Iterator[Node]:
        yield self


_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "our",
        "that",
        "the",
        "their",
        "this",
        "to",
        "via",
        "we",
        "with",
        "using",
        "based",
        "new",
        "model",
        "models",
        "learning",
        "data",
        "method",
        "methods",
        "network",
        "networks",
    )
)


def key_cost(keys: frozenset[str]) -> float:
    """A rough guess of how often any of these index keys occurs in a paper (lower is more selective)."""
    total = 0.0
    for key in keys:
        if key.startswith("cat:"):
            total += 0.3
        elif key.startswith("id:"):
            total += 1e-6
        elif key in _STOPWORDS:
            total += 1.0
        else:
            total += 0.5 ** min(len(key), 12)
    return total


@dataclass(frozen=True, eq=False)
class Not(Node):
    """A negated part; only valid inside an AND that also has a positive part (arXiv's ANDNOT)."""

    child: Node
    pos: int = 0

    def compile(self) -> Predicate:
        child = self.child.compile()
        return lambda paper: not child(paper)

    def fts(self) -> str | None:
        return None  # left to the evaluator: leaving it out only widens the prefilter

    def arxiv(self) -> str:
        return self.child.arxiv()

    def keys(self) -> frozenset[str] | None:
        return None

    def walk(self) -> Iterator[Node]:
        yield self
        yield from self.child.walk()


@dataclass(frozen=True, eq=False)
class And(Node):
    children: tuple[Node, ...]
    pos: int = 0

    def compile(self) -> Predicate:
        # negations last: the positive parts usually decide, and cheaply
        ordered = sorted(self.children, key=lambda c: isinstance(c, Not))
        parts = [c.compile() for c in ordered]
        if len(parts) == 2:
            first, second = parts
            return lambda paper: first(paper) and second(paper)
        return lambda paper: all(part(paper) for part in parts)

    def fts(self) -> str | None:
        parts = [p for c in self.children if (p := c.fts()) is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def arxiv(self) -> str:
        positive = [c for c in self.children if not isinstance(c, Not)]
        negative = [c for c in self.children if isinstance(c, Not)]
        left = " AND ".join(_arxiv_operand(c) for c in positive)
        if not negative:
            return left
        if len(positive) > 1:
            left = f"({left})"
        right = " OR ".join(_arxiv_operand(c.child) for c in negative)
        return f"{left} ANDNOT ({right})" if len(negative) > 1 else f"{left} ANDNOT {right}"

    def keys(self) -> frozenset[str] | None:
        options = [k for c in self.children if (k := c.keys()) is not None]
        return min(options, key=key_cost) if options else None

    def required_categories(self) -> frozenset[str] | None:
        # every positive part binds the match: the narrowest bound is the most useful (a Not part has none)
        options = [r for c in self.children if (r := c.required_categories()) is not None]
        return min(options, key=len) if options else None

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass(frozen=True, eq=False)
class Or(Node):
    children: tuple[Node, ...]
    pos: int = 0

    def compile(self) -> Predicate:
        parts = [c.compile() for c in self.children]
        if len(parts) == 2:
            first, second = parts
            return lambda paper: first(paper) or second(paper)
        return lambda paper: any(part(paper) for part in parts)

    def fts(self) -> str | None:
        parts = [c.fts() for c in self.children]
        if any(p is None for p in parts):
            return None  # one branch without a constraint makes the whole OR unconstrained
        return "(" + " OR ".join(p for p in parts if p is not None) + ")"

    def arxiv(self) -> str:
        return " OR ".join(_arxiv_operand(c) for c in self.children)

    def keys(self) -> frozenset[str] | None:
        union: set[str] = set()
        for c in self.children:
            k = c.keys()
            if k is None:
                return None
            union |= k
        return frozenset(union)

    def required_categories(self) -> frozenset[str] | None:
        # a bound only when every branch has one: one free branch frees the whole OR
        union: set[str] = set()
        for c in self.children:
            r = c.required_categories()
            if r is None:
                return None
            union |= r
        return frozenset(union)

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()


def _arxiv_operand(node: Node) -> str:
    """Parenthesise compound operands, so arXiv's own operator precedence never matters."""
    text = node.arxiv()
    return f"({text})" if isinstance(node, And | Or) and len(node.children) > 1 else text

"""The FTS5 prefilter a topic query writes (`TopicQuery.to_fts5`), as a PostgreSQL tsquery that never drops a
paper the FTS5 expression would find.

The grammar read is the one the query language writes: quoted strings (a trailing * makes the last word a
prefix), AND, OR, parentheses and column filters (`title : ...`, `{title abstract authors} : ...`). Strings go
through FTS5's own tokenizer (bot/store/postgres/tokens.py), so the lexemes are those the index holds. Every
translation is as broad as FTS5's or broader:
- a phrase becomes the AND of its words (the exact evaluator checks word order, as it checks everything);
- a column filter becomes a weight (title A, abstract B, authors C);
- anything else (syntax the query language does not write) is no condition at all: inside an AND it drops out,
  inside an OR it makes the OR unconstrained, and a whole expression left without one is None (no filter).

`to_condition` writes the same as SQL for a topic's history match, title-only strings looked up in the index of
the titles alone (TITLE_VECTOR, migration 0008): the `words` index keeps no weights, so a title-only lexeme there
finds every paper holding the word anywhere, and PostgreSQL re-reads each one's tsvector to check the weight.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bot.store.postgres.tokens import encode, hex_code, query_words

WEIGHTS = {"title": "A", "abstract": "B", "authors": "C"}
ALL_COLUMNS = "ABC"
TITLE = WEIGHTS["title"]
# The expression of the index of titles (migration 0008 papers_title_words): the title part of `words`.
TITLE_VECTOR = "ts_filter(p.words, '{a}')"
_COLUMN_SQL = {"words": "p.words", "title": TITLE_VECTOR}  # each _Column's indexed expression
_SQL_OP = {"&": " AND ", "|": " OR "}
_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"]|"")*"\*?)|(?P<op>[(){}:])|(?P<bare>[^\s(){}:"]+\*?))')


class _Untranslatable(Exception):
    pass


_Column = Literal["words", "title"]


@dataclass(frozen=True)
class _Lookup:
    """A tsquery on one indexed column: `words` (weights as written) or the titles' own vector."""

    column: _Column
    tsquery: str


@dataclass(frozen=True)
class _Both:
    """Lookups in different columns joined by `op` ("&" or "|"), which one tsquery cannot say."""

    op: str
    parts: tuple[_Lookup | _Both, ...]


_Node = _Lookup | _Both


@dataclass
class _Reader:
    tokens: list[str]
    title_index: bool  # title-only strings go to the titles' vector (else to `words` with weight A)
    at: int = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise _Untranslatable("unexpected end")
        self.at += 1
        return token


def to_tsquery(fts: str | None) -> str | None:
    """A tsquery (in PostgreSQL's input syntax) on `words` that every paper FTS5's `fts` finds satisfies; None:
    no condition."""
    node = _translate(fts, title_index=False)
    assert node is None or isinstance(node, _Lookup)  # one column: always one tsquery
    return None if node is None else node.tsquery


def to_condition(fts: str | None) -> tuple[str, list[str]] | None:
    """An SQL condition on papers `p` (with a `?` per tsquery, the list of them) that every paper FTS5's `fts`
    finds meets, title-only strings looked up through the index of titles; None: no condition."""
    node = _translate(fts, title_index=True)
    if node is None:
        return None
    params: list[str] = []
    return _sql(node, params), params


def _sql(node: _Node, params: list[str]) -> str:
    if isinstance(node, _Lookup):
        params.append(node.tsquery)
        return f"{_COLUMN_SQL[node.column]} @@ ?::tsquery"
    return "(" + _SQL_OP[node.op].join(_sql(part, params) for part in node.parts) + ")"


def _translate(fts: str | None, *, title_index: bool) -> _Node | None:
    if fts is None:
        return None
    try:
        reader = _Reader(_tokens(fts), title_index)
        result = _or(reader, ALL_COLUMNS)
        if reader.peek() is not None:
            raise _Untranslatable(f"unexpected {reader.peek()!r}")
    except _Untranslatable:
        return None
    return result


def _joined(op: str, parts: list[_Node]) -> _Node:
    """`parts` joined by `op`: the lookups of each column as one tsquery, and those of different columns (or
    groups of them) side by side."""
    flat: list[_Node] = []
    for part in parts:
        flat.extend(part.parts if isinstance(part, _Both) and part.op == op else [part])
    columns: dict[_Column, list[str]] = {}
    groups: list[_Node] = []
    for part in flat:
        if isinstance(part, _Lookup):
            columns.setdefault(part.column, []).append(part.tsquery)
        else:
            groups.append(part)
    lookups: list[_Node] = [
        _Lookup(column, found[0] if len(found) == 1 else "(" + f" {op} ".join(found) + ")")
        for column, found in columns.items()
    ]
    nodes = [*lookups, *groups]
    return nodes[0] if len(nodes) == 1 else _Both(op, tuple(nodes))


def _tokens(fts: str) -> list[str]:
    tokens, at = [], 0
    while at < len(fts):
        if fts[at:].strip() == "":
            break
        match = _TOKEN.match(fts, at)
        if match is None:
            raise _Untranslatable(f"unreadable at {at}")
        tokens.append(match.group("string") or match.group("op") or match.group("bare"))
        at = match.end()
    return tokens


def _or(reader: _Reader, weights: str) -> _Node | None:
    parts = [_and(reader, weights)]
    while reader.peek() == "OR":
        reader.take()
        parts.append(_and(reader, weights))
    kept = [p for p in parts if p is not None]
    if len(kept) < len(parts):
        return None  # one branch without a condition leaves the whole OR without one
    return _joined("|", kept)


def _and(reader: _Reader, weights: str) -> _Node | None:
    parts = [_unary(reader, weights)]
    while reader.peek() == "AND":
        reader.take()
        parts.append(_unary(reader, weights))
    kept = [p for p in parts if p is not None]  # a part without a condition only widens
    return _joined("&", kept) if kept else None


def _unary(reader: _Reader, weights: str) -> _Node | None:
    token = reader.take()
    if token == "(":
        inner = _or(reader, weights)
        if reader.take() != ")":
            raise _Untranslatable("unclosed parenthesis")
        return inner
    if token == "{":
        columns = []
        while (name := reader.take()) != "}":
            columns.append(name)
        return _filtered(reader, weights, columns)
    if token.startswith('"'):
        return _string(token, weights, reader.title_index)
    if reader.peek() == ":":
        return _filtered(reader, weights, [token])
    if token in ("AND", "OR", "NOT", ")", "}", ":"):
        raise _Untranslatable(f"unexpected {token!r}")
    return _string(token, weights, reader.title_index)  # a bare word: FTS5 reads it as a one-word string


def _filtered(reader: _Reader, weights: str, columns: list[str]) -> _Node | None:
    if reader.take() != ":" or any(c not in WEIGHTS for c in columns):
        raise _Untranslatable("not a column filter")
    allowed = "".join(w for w in weights if w in {WEIGHTS[c] for c in columns})
    if not allowed:
        raise _Untranslatable("columns outside the enclosing filter")
    return _unary(reader, allowed)


def _string(token: str, weights: str, title_index: bool) -> _Lookup | None:
    prefix = token.endswith("*")
    text = token.removesuffix("*")
    if text.startswith('"'):
        text = text[1:-1].replace('""', '"')
    words = query_words(text)
    if not words:
        return None  # nothing FTS5 would look for: leave it to the evaluator
    in_title = title_index and weights == TITLE  # the titles' vector: its lexemes are all the title's
    suffix = "" if weights == ALL_COLUMNS or in_title else weights
    lexemes = [f"'{encode(w)}'" + (":" + suffix if suffix else "") for w in words[:-1]]
    last = words[-1]
    if not prefix:
        lexemes.append(f"'{encode(last)}'" + (":" + suffix if suffix else ""))
    else:
        # A prefix kept whole may also start a word written in hex (one with another character later on).
        forms = {encode(last), hex_code(last)}
        options = [f"'{form}':*{suffix}" for form in sorted(forms)]
        lexemes.append(options[0] if len(options) == 1 else "(" + " | ".join(options) + ")")
    tsquery = lexemes[0] if len(lexemes) == 1 else "(" + " & ".join(lexemes) + ")"
    return _Lookup("title" if in_title else "words", tsquery)

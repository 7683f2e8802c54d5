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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.store.postgres.tokens import encode, hex_code, query_words

WEIGHTS = {"title": "A", "abstract": "B", "authors": "C"}
ALL_COLUMNS = "ABC"
_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"]|"")*"\*?)|(?P<op>[(){}:])|(?P<bare>[^\s(){}:"]+\*?))')


class _Untranslatable(Exception):
    pass


@dataclass
class _Reader:
    tokens: list[str]
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
    """A tsquery (in PostgreSQL's input syntax) every paper FTS5's `fts` finds satisfies; None: no condition."""
    if fts is None:
        return None
    try:
        tokens = _tokens(fts)
        reader = _Reader(tokens)
        result = _or(reader, ALL_COLUMNS)
        if reader.peek() is not None:
            raise _Untranslatable(f"unexpected {reader.peek()!r}")
    except _Untranslatable:
        return None
    return result


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


def _or(reader: _Reader, weights: str) -> str | None:
    parts = [_and(reader, weights)]
    while reader.peek() == "OR":
        reader.take()
        parts.append(_and(reader, weights))
    if any(p is None for p in parts):
        return None  # one branch without a condition leaves the whole OR without one
    return parts[0] if len(parts) == 1 else "(" + " | ".join(p for p in parts if p is not None) + ")"


def _and(reader: _Reader, weights: str) -> str | None:
    parts = [_unary(reader, weights)]
    while reader.peek() == "AND":
        reader.take()
        parts.append(_unary(reader, weights))
    kept = [p for p in parts if p is not None]  # a part without a condition only widens
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else "(" + " & ".join(kept) + ")"


def _unary(reader: _Reader, weights: str) -> str | None:
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
        return _string(token, weights)
    if reader.peek() == ":":
        return _filtered(reader, weights, [token])
    if token in ("AND", "OR", "NOT", ")", "}", ":"):
        raise _Untranslatable(f"unexpected {token!r}")
    return _string(token, weights)  # a bare word: FTS5 reads it as a one-word string


def _filtered(reader: _Reader, weights: str, columns: list[str]) -> str | None:
    if reader.take() != ":" or any(c not in WEIGHTS for c in columns):
        raise _Untranslatable("not a column filter")
    allowed = "".join(w for w in weights if w in {WEIGHTS[c] for c in columns})
    if not allowed:
        raise _Untranslatable("columns outside the enclosing filter")
    return _unary(reader, allowed)


def _string(token: str, weights: str) -> str | None:
    prefix = token.endswith("*")
    text = token.removesuffix("*")
    if text.startswith('"'):
        text = text[1:-1].replace('""', '"')
    words = query_words(text)
    if not words:
        return None  # nothing FTS5 would look for: leave it to the evaluator
    suffix = "" if weights == ALL_COLUMNS else weights
    lexemes = [f"'{encode(w)}'" + (":" + suffix if suffix else "") for w in words[:-1]]
    last = words[-1]
    if not prefix:
        lexemes.append(f"'{encode(last)}'" + (":" + suffix if suffix else ""))
    else:
        # A prefix kept whole may also start a word written in hex (one with another character later on).
        forms = {encode(last), hex_code(last)}
        options = [f"'{form}':*{suffix}" for form in sorted(forms)]
        lexemes.append(options[0] if len(options) == 1 else "(" + " | ".join(options) + ")")
    return lexemes[0] if len(lexemes) == 1 else "(" + " & ".join(lexemes) + ")"

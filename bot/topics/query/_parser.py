"""Query text into a Node tree: luqum reads the Lucene-like syntax, then the tree is checked and converted.

arXiv's syntax is Lucene's plus ANDNOT and fields of its own, so ANDNOT is rewritten before luqum reads the
text, and every error is reported at its offset in the text the user wrote, saying what was expected there
(QuerySyntaxError), because a topic query is typed into a Discord command with no other help at hand.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from luqum import tree as lq
from luqum.exceptions import IllegalCharacterError
from luqum.parser import lexer as _luqum_lexer
from luqum.parser import parser as _luqum_parser

from bot.errors import PaperwatchError
from bot.models import split_arxiv_id
from bot.topics.query._folding import fold_words
from bot.topics.query._nodes import And, Node, Not, Or
from bot.topics.query._terms import AuthorTerm, CategoryTerm, IdTerm, QWord, TextTerm

if TYPE_CHECKING:
    from ply.lex import LexToken  # luqum's lexer tokens

MAX_QUERY_LENGTH = 500  # a query anyone may type (/follow, /search, the CLI): bounds hostile input

FIELDS = ("ti", "abs", "au", "co", "jr", "cat", "id", "all")
_FIELD_LIST = ", ".join(f"{name}:" for name in FIELDS)
_TERM_EXPECTED = "a term, a phrase or '('"


class QuerySyntaxError(PaperwatchError):
    """A topic query that cannot be parsed; `position` is a 0-based offset into `text`."""

    def __init__(self, text: str, position: int, expected: str) -> None:
        self.text = text
        self.position = max(0, min(position, len(text)))
        self.expected = expected
        super().__init__(f"position {self.position}: expected {expected}")

    def pointer(self) -> str:
        """The query on one line and a caret under the error position."""
        line = re.sub(r"\s", " ", self.text)
        return f"{line}\n{' ' * self.position}^"


_ANDNOT = "ANDNOT"
_PARSE_LOCK = threading.Lock()  # PLY keeps some parser state on the shared parser object
_CATEGORY = re.compile(r"[a-z][a-z\-]*(\.[a-z][a-z\-]*)?")
_CATEGORY_PREFIX = re.compile(r"[a-z][a-z\-]*(\.[a-z\-]*)?")


@dataclass
class _Source:
    """The query as written, the text handed to luqum (ANDNOT rewritten) and the offsets between them."""

    text: str
    rewritten: str
    origin: list[int]  # origin[i] = offset in `text` of rewritten[i]; one extra entry for the end
    andnot_at: set[int]  # offsets in `text` covered by an ANDNOT

    def at(self, rewritten_pos: int | None) -> int:
        if rewritten_pos is None:
            return len(self.text.rstrip())
        return self.origin[max(0, min(rewritten_pos, len(self.origin) - 1))]

    def error(self, rewritten_pos: int | None, expected: str) -> QuerySyntaxError:
        return QuerySyntaxError(self.text, self.at(rewritten_pos), expected)


def parse(text: str, max_length: int = MAX_QUERY_LENGTH) -> Node:
    """The query tree of `text`; raises QuerySyntaxError with the position and what was expected there.
    `max_length` is the bound of whoever wrote the text (the reviewed catalog has a larger one)."""
    if len(text) > max_length:
        raise QuerySyntaxError(
            text, max_length, f"at most {max_length} characters (the query has {len(text)})"
        )
    if not text.strip():
        raise QuerySyntaxError(text, 0, f"{_TERM_EXPECTED}: the query is empty")
    source = _rewrite_andnot(text)
    tree = _run_luqum(source)
    node = _Converter(source).convert(tree, None)
    _check_negations(node, source, inside_and=False)
    return node


def _lex(text: str) -> list[LexToken]:
    """luqum's tokens for `text`; the lexer's state is per call."""
    lexer = _luqum_lexer.clone()
    lexer.input(text)
    return list(iter(lexer.token, None))


def _rewrite_andnot(text: str) -> _Source:
    """arXiv's ANDNOT is not Lucene: rewrite each ANDNOT token to "AND NOT", remembering offsets."""
    try:
        tokens = _lex(text)
    except IllegalCharacterError:
        tokens = []  # reported with a position when luqum parses the text below
    starts = sorted(t.lexpos for t in tokens if t.type == "TERM" and str(t.value) == _ANDNOT)
    rewritten: list[str] = []
    origin: list[int] = []
    previous = 0
    for start in starts:
        rewritten.append(text[previous:start])
        origin.extend(range(previous, start))
        rewritten.append("AND NOT")
        origin.extend([start] * 4 + [start + 3] * 3)
        previous = start + len(_ANDNOT)
    rewritten.append(text[previous:])
    origin.extend(range(previous, len(text) + 1))
    covered = {start + i for start in starts for i in range(len(_ANDNOT))}
    return _Source(text, "".join(rewritten), origin, covered)


def _run_luqum(source: _Source) -> lq.Item:
    lexer = _luqum_lexer.clone()
    seen: list[LexToken | None] = []

    def next_token() -> LexToken | None:  # records tokens, so an error can say where and after what
        token = lexer.token()
        seen.append(token)
        return token

    try:
        with _PARSE_LOCK:
            return _luqum_parser.parse(source.rewritten, lexer=lexer, tokenfunc=next_token)
    except IllegalCharacterError:
        raise _illegal_character(source, lexer.lexpos) from None
    except Exception:  # luqum raises assorted errors (syntax, decimal, ...): all are syntax errors here
        raise _syntax_error(source, seen) from None


def _illegal_character(source: _Source, pos: int) -> QuerySyntaxError:
    char = source.rewritten[pos : pos + 1]
    if char == '"':
        opened = source.at(pos)
        return QuerySyntaxError(source.text, len(source.text), f"'\"' to close the phrase opened at {opened}")
    if char == "'":
        return source.error(pos, f"{_TERM_EXPECTED}; use double quotes for phrases")
    return source.error(pos, f"{_TERM_EXPECTED}, not {char!r}")


def _syntax_error(source: _Source, seen: list[LexToken | None]) -> QuerySyntaxError:
    """Say what was expected where the parser stopped, from the token before it."""
    bad = seen[-1] if seen else None
    before = seen[-2] if len(seen) > 1 else None
    after = f" after {_token_name(source, before)}" if before is not None else ""
    if bad is None:  # the text ended too early
        if before is not None and before.type in {"AND_OP", "OR_OP", "NOT", "COLUMN", "LPAREN"}:
            return source.error(None, _TERM_EXPECTED + after)
        unclosed = _unclosed_paren(seen)
        if unclosed is not None:
            return source.error(None, f"')' to close the '(' at {source.at(unclosed)}")
        return source.error(None, _TERM_EXPECTED + after)
    if before is None or before.type in {"AND_OP", "OR_OP", "NOT", "COLUMN", "LPAREN"}:
        where = after or f" before {_token_name(source, bad)}"
        return source.error(bad.lexpos, _TERM_EXPECTED + where)
    if bad.type == "RPAREN" and _unclosed_paren(seen[:-1]) is None:
        return source.error(bad.lexpos, "AND, OR, a term or the end of the query; this ')' closes nothing")
    if bad.type == "COLUMN":
        return source.error(bad.lexpos, f"a field name before ':' ({_FIELD_LIST})")
    return source.error(bad.lexpos, f"AND, OR, ANDNOT, {_TERM_EXPECTED}")


def _unclosed_paren(tokens: list[LexToken | None]) -> int | None:
    opened: list[int] = []
    for t in tokens:
        if t is not None and t.type == "LPAREN":
            opened.append(t.lexpos)
        elif t is not None and t.type == "RPAREN" and opened:
            opened.pop()
    return opened[-1] if opened else None


def _token_name(source: _Source, token: LexToken) -> str:
    if token.type in {"AND_OP", "NOT"} and source.at(token.lexpos) in source.andnot_at:
        return _ANDNOT
    if token.type == "COLUMN":
        return "':'"
    if token.type in {"LPAREN", "RPAREN"}:
        return f"'{token.value}'"
    return str(token.value)


_UNSUPPORTED: tuple[tuple[type, str], ...] = (
    (lq.Prohibit, "a term; use ANDNOT (or NOT) instead of '-'"),
    (lq.Plus, "a term; '+' is not supported (terms are required by default)"),
    (lq.Range, "a term; ranges like [a TO b] are not supported in topics"),
    (lq.From, "a term; '>' comparisons are not supported"),
    (lq.To, "a term; '<' comparisons are not supported"),
    (lq.Fuzzy, "a term; fuzzy '~' search is not supported"),
    (lq.Proximity, "a phrase; proximity '~' search is not supported"),
    (lq.Boost, "a term; '^' boosts are not supported"),
    (lq.Regex, "a term; regular expressions are not supported"),
)


class _Converter:
    """luqum tree -> query Node, checking fields and terms; positions are reported in the original text."""

    def __init__(self, source: _Source) -> None:
        self.source = source

    def convert(self, item: lq.Item, field_name: str | None) -> Node:
        for kind, expected in _UNSUPPORTED:
            if isinstance(item, kind):
                raise self.source.error(item.pos, expected)  # type: ignore[attr-defined]  # luqum sets pos on every item
        pos = self.source.at(item.pos)
        if isinstance(item, lq.SearchField):
            return self._search_field(item, field_name)
        if isinstance(item, lq.Group | lq.FieldGroup):
            return self.convert(item.children[0], field_name)
        if isinstance(item, lq.Not):
            return Not(self.convert(item.children[0], field_name), pos=pos)
        if isinstance(item, lq.AndOperation | lq.UnknownOperation):
            return _flatten(And, [self.convert(c, field_name) for c in item.children], pos)
        if isinstance(item, lq.OrOperation):
            return _flatten(Or, [self.convert(c, field_name) for c in item.children], pos)
        if isinstance(item, lq.Word | lq.Phrase):
            return self._term(item, field_name or "all")
        raise self.source.error(item.pos, _TERM_EXPECTED)

    def _search_field(self, item: lq.SearchField, outer: str | None) -> Node:
        name = item.name.lower()
        if outer is not None:
            raise self.source.error(item.pos, f"{_TERM_EXPECTED} inside {outer}:(...), not another field")
        if name not in FIELDS:
            raise self.source.error(item.pos, f"a field among {_FIELD_LIST}, not {item.name!r}")
        return self.convert(item.expr, name)

    def _term(self, item: lq.Word | lq.Phrase, field_name: str) -> Node:
        raw = str(item.value)
        pos = self.source.at(item.pos)
        if field_name == "cat":
            return self._category(item, raw, pos)
        if field_name == "id":
            return self._arxiv_id(item, raw, pos)
        words = self._words(item, raw)
        if field_name == "au":
            initials = tuple(QWord(w.text, True) if _is_initial(w) else w for w in words)
            return AuthorTerm(initials, raw, pos)
        return TextTerm(field_name, words, raw, pos)

    def _words(self, item: lq.Word | lq.Phrase, raw: str) -> tuple[QWord, ...]:
        is_phrase = isinstance(item, lq.Phrase)
        body = raw[1:-1] if is_phrase else raw
        prefix = not is_phrase and body.endswith("*")
        if not is_phrase:
            self._check_wildcards(item, body)
        words = fold_words(body[:-1] if prefix else body)
        if not words:
            raise self.source.error(item.pos, "a word with letters or digits")
        if prefix and not fold_words(body[-2:-1]):
            raise self.source.error(item.pos + len(body) - 1, "a letter or digit right before '*'")
        return tuple(QWord(w, prefix and i == len(words) - 1) for i, w in enumerate(words))

    def _check_wildcards(self, item: lq.Item, body: str) -> None:
        for i, char in enumerate(body):
            if char == "?" or (char == "*" and i != len(body) - 1):
                raise self.source.error(item.pos + i, "'*' only at the end of a term ('?' is not supported)")

    def _category(self, item: lq.Word | lq.Phrase, raw: str, pos: int) -> Node:
        value = (raw[1:-1] if isinstance(item, lq.Phrase) else raw).strip().lower()
        prefix = value.endswith("*")
        name = value[:-1] if prefix else value
        pattern = _CATEGORY_PREFIX if prefix else _CATEGORY
        if not name or pattern.fullmatch(name) is None:
            raise self.source.error(item.pos, "a category like cs.LG, hep-th or cs.*")
        return CategoryTerm(name, prefix, raw, pos)

    def _arxiv_id(self, item: lq.Word | lq.Phrase, raw: str, pos: int) -> Node:
        value = (raw[1:-1] if isinstance(item, lq.Phrase) else raw).strip()
        if value.endswith("*") and len(value) > 1:
            return IdTerm(value[:-1].casefold(), True, raw, pos)
        try:
            base, _version = split_arxiv_id(value)
        except ValueError:
            raise self.source.error(item.pos, "an arXiv id like 2401.12345 or hep-th/9901001") from None
        return IdTerm(base.casefold(), False, raw, pos)


def _is_initial(word: QWord) -> bool:
    return len(word.text) == 1 and word.text.isalpha()


def _flatten(kind: type[And] | type[Or], children: list[Node], pos: int) -> Node:
    flat: list[Node] = []
    for child in children:
        flat.extend(child.children if isinstance(child, kind) else [child])
    return kind(tuple(flat), pos=pos)


def _check_negations(node: Node, source: _Source, inside_and: bool) -> None:
    """NOT/ANDNOT must subtract from a positive part joined by AND, as arXiv's binary ANDNOT does."""
    if isinstance(node, Not):
        if not inside_and:
            raise QuerySyntaxError(
                source.text, node.pos, "a positive term before NOT: a topic cannot be only a negation"
            )
        _check_negations(node.child, source, inside_and=False)
    elif isinstance(node, And):
        if all(isinstance(c, Not) for c in node.children):
            raise QuerySyntaxError(
                source.text, node.children[0].pos, "a positive term before NOT (write 'A ANDNOT B')"
            )
        for child in node.children:
            _check_negations(child, source, inside_and=True)
    elif isinstance(node, Or):
        for child in node.children:
            _check_negations(child, source, inside_and=False)

"""The words of SQLite's FTS5 index, for PostgreSQL's full-text index.

Topic queries write their prefilter in FTS5 syntax and reason about FTS5's words (bot/fts_tokenizer.py:
unicode61 folding, then Porter stems), so that it never drops a true match. PostgreSQL's own parsers and
stemmers split and stem differently (URLs, hyphens, Snowball stems). So the PostgreSQL store indexes the very
words FTS5 would: each paper's title, abstract and authors go through SQLite's FTS5 tokenizer (an in-memory
table, SQLite being part of Python), and the words are stored space-joined; the `words` tsvector column is
built from them with the `simple` configuration, which keeps each such word as one lexeme. A query word goes
through the same tokenizer, so both sides agree by construction.

PostgreSQL sees only words it keeps whole: ASCII letters and digits starting with a letter. Any other word is
written as "x" + its UTF-8 bytes in hex: one with another character (no locale of the database can then split or
fold it) and one starting with a digit (the parser reads "91e607f" as the number 91e607 and the word f). The code
keeps prefixes (a word's prefix encodes to a prefix of the word's code); an ASCII word that happens to look like a
code only widens the prefilter.

Bounds PostgreSQL sets: a lexeme of over 2,047 bytes is not indexed, a lexeme keeps at most 256 positions (the
column weights of later ones are lost) and positions stop at 16,383. arXiv's own limits on titles, abstracts and
author lists keep papers well inside them.
"""

from __future__ import annotations

import sqlite3
import struct
import threading
from collections.abc import Sequence
from contextlib import closing
from functools import lru_cache

from bot.fts_tokenizer import PAPERS_TOKENIZER, fold_words

Fields = tuple[str, str, str]  # title, abstract, authors (names joined with ", ")


def kept_whole(word: str) -> bool:
    """Whether PostgreSQL's parser keeps the word as one lexeme as it is: ASCII, starting with a letter."""
    return word.isascii() and word[:1].isalpha()


def hex_code(word: str) -> str:
    return "x" + word.encode("utf-8").hex()


def encode(word: str) -> str:
    """A word as PostgreSQL indexes it: as it is when kept whole, else its hex code."""
    return word if kept_whole(word) else hex_code(word)


def _scratch() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, abstract, authors, tokenize='{PAPERS_TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    return db


def indexed(papers: Sequence[Fields]) -> list[tuple[str, str, str, bytes]]:
    """Each paper's FTS5 words per column (index_words) and the `words` tsvector built from them, in binary."""
    out = []
    for title, abstract, authors in _stemmed(papers):
        joined = (" ".join(title), " ".join(abstract), " ".join(authors))
        out.append((*joined, tsvector((title, abstract, authors), joined)))
    return out


_WEIGHTS = (3 << 14, 2 << 14, 1 << 14)  # A (title), B (abstract), C (authors): a position's top two bits
_MAX_POSITION = 16_383  # later words share it
_MAX_POSITIONS = 255  # kept per lexeme by to_tsvector
_MAX_LEXEME = 2_047  # bytes (an encoded word is ASCII): to_tsvector skips a longer word, position and all


_ONE_POSITION = struct.Struct("!HH").pack


def tsvector(columns: tuple[list[str], list[str], list[str]], fields: Fields) -> bytes:
    """`_bounded_tsvector(fields)`, given also the words of `fields` (its `columns`), fast for the usual paper:
    under 16,383 words, none too long for the index, none repeated more than 255 times (none of PostgreSQL's
    bounds applies, so positions simply run on)."""
    lexemes: dict[str, list[int]] = {}
    shift = 0
    for words, weight in zip(columns, _WEIGHTS, strict=True):
        if not words:
            continue
        if shift + len(words) >= _MAX_POSITION or max(map(len, words)) > _MAX_LEXEME:
            return _bounded_tsvector(fields)
        for at, word in enumerate(words, (weight | shift) + 1):  # weight | position, the position < 2**14
            held = lexemes.get(word)
            if held is None:
                lexemes[word] = [at]
            else:
                held.append(at)
        shift += len(words)
    out = bytearray(struct.pack("!i", len(lexemes)))
    for word, positions in lexemes.items():
        out += word.encode()
        if len(positions) == 1:
            out += b"\0" + _ONE_POSITION(1, positions[0])
        elif len(positions) <= _MAX_POSITIONS:
            out += b"\0" + struct.pack(f"!H{len(positions)}H", len(positions), *positions)
        else:
            return _bounded_tsvector(fields)
    return bytes(out)


def _bounded_tsvector(fields: Fields) -> bytes:
    """The tsvector `setweight(to_tsvector('simple', title_words), 'A') || ... 'B' || ... 'C'` of a paper's
    words, in PostgreSQL's binary form, built here: PostgreSQL's parser was most of a paper's ingest cost.
    Each column's positions start after the largest of the columns before (as `||` shifts them). Equal to
    PostgreSQL's own, bounds included (tests/store/test_postgres_ingest.py compares them)."""
    lexemes: dict[str, list[int]] = {}
    shift = 0
    for text, weight in zip(fields, _WEIGHTS, strict=True):
        column: dict[str, list[int]] = {}
        at = 0
        for word in text.split():
            if len(word) > _MAX_LEXEME:
                continue
            at += 1
            held = column.setdefault(word, [])
            if len(held) < _MAX_POSITIONS and (not held or held[-1] < _MAX_POSITION):
                held.append(min(at, _MAX_POSITION))
        for word, positions in column.items():
            merged = lexemes.setdefault(word, [])
            for position in positions:
                shifted = min(position + shift, _MAX_POSITION)
                if not merged or merged[-1] & _MAX_POSITION < shifted:
                    merged.append(weight | shifted)
        if column:
            shift = min(shift + max(p[-1] for p in column.values()), _MAX_POSITION)
    parts = [
        word.encode() + b"\0" + struct.pack(f"!H{len(positions)}H", len(positions), *positions)
        for word, positions in lexemes.items()
    ]
    return struct.pack("!i", len(parts)) + b"".join(parts)


def index_words(papers: Sequence[Fields]) -> list[Fields]:
    """For each paper, the encoded words FTS5 indexes in its title, abstract and authors, in order."""
    return [(" ".join(t), " ".join(a), " ".join(au)) for t, a, au in _stemmed(papers)]


def _stemmed(papers: Sequence[Fields]) -> list[tuple[list[str], list[str], list[str]]]:
    """Each paper's encoded FTS5 words per column: the folding tokenizer's words (fold_words, its exact twin)
    each through FTS5's own Porter stemmer, asked once per distinct word (reading FTS5's index back for every
    paper is four times slower)."""
    folded = [
        (fold_words(title), fold_words(abstract), fold_words(authors)) for title, abstract, authors in papers
    ]
    seen: set[str] = set()
    for columns in folded:
        for words in columns:
            seen.update(words)
    _learn_stems(seen)
    stem = _STEMS.__getitem__
    return [(list(map(stem, t)), list(map(stem, a)), list(map(stem, au))) for t, a, au in folded]


_STEMS: dict[str, str] = {}  # folded word -> its encoded stem
_STEMS_KEPT = 1_000_000  # about 100 MB at most: forgotten wholesale beyond (a million papers hold more words)
_STEMS_LOCK = threading.Lock()


def _learn_stems(words: set[str]) -> None:
    """Ask FTS5 for the stem of each word not yet known: a folded word is one token of PAPERS_TOKENIZER."""
    with _STEMS_LOCK:
        todo = sorted(words - _STEMS.keys())
        if not todo:
            return
        if len(_STEMS) + len(todo) > _STEMS_KEPT:
            _STEMS.clear()
        with closing(_scratch()) as db:
            db.executemany("INSERT INTO t (rowid, title) VALUES (?, ?)", enumerate(todo))
            for doc, term in db.execute("SELECT doc, term FROM v"):
                _STEMS[todo[doc]] = encode(term)


@lru_cache(maxsize=4096)
def query_words(text: str) -> tuple[str, ...]:
    """The words FTS5 makes of a query string (folded and stemmed, not yet encoded)."""
    with closing(_scratch()) as db:
        db.execute("INSERT INTO t (rowid, title) VALUES (1, ?)", (text,))
        return tuple(r[0] for r in db.execute("SELECT term FROM v ORDER BY offset"))

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
from collections.abc import Collection, Sequence
from contextlib import closing
from functools import lru_cache
from itertools import chain, repeat

import numpy as np

from bot.fts_tokenizer import PAPERS_TOKENIZER, fold_words
from bot.store.postgres.tsvectors import (
    LEXEME_BITS,
    MAX_LEXEME,
    MAX_POSITION,
    MAX_POSITIONS,
    Ints,
    Lexicon,
    build,
)

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


def tsvectors(papers: Sequence[Fields]) -> list[bytes]:
    """Each paper's `words` tsvector, in binary: `bounded_tsvector` of its `index_words`, built a page at once."""
    with _LOCK:
        return _page([_folded(paper) for paper in papers])


def index_words(papers: Sequence[Fields]) -> list[Fields]:
    """For each paper, the encoded words FTS5 indexes in its title, abstract and authors, in order."""
    with _LOCK:
        out = []
        for paper in papers:
            folded = _folded(paper)
            _ids(list(chain.from_iterable(folded)))
            out.append(_joined(folded))
        return out


Folded = tuple[list[str], list[str], list[str]]  # a paper's folded words per column (fold_words)


def _joined(paper: Folded) -> Fields:
    """A paper's encoded stems per column, space-joined. Called holding _LOCK."""
    ids, stems = _stems.ids, _stems.stems
    title, abstract, authors = (" ".join([stems[ids[w]] for w in column]) for column in paper)
    return title, abstract, authors


def _tsvectors(papers: Sequence[Folded], ids: Ints) -> list[bytes]:
    """The tsvectors of papers (their words, and all their words' lexeme ids in order): the page at once
    (tsvectors.py `build`), but one by one (bounded_tsvector) for a paper outside PostgreSQL's bounds."""
    if not papers:
        return []
    title, abstract, authors = (
        np.fromiter((len(p[k]) for p in papers), np.int64, len(papers)) for k in range(3)
    )
    words = title + abstract + authors
    inside = words < MAX_POSITION  # more words: positions past PostgreSQL's bound
    if not inside.all():
        ids, title, abstract, authors = (
            ids[np.repeat(inside, words)],
            title[inside],
            abstract[inside],
            authors[inside],
        )
    data, at, outside = build(_stems.lexicon, ids, title, abstract, authors)
    starts = at.tolist()
    built = iter([data[starts[i] : starts[i + 1]] for i in range(len(starts) - 1)])
    out = [next(built) if kept else b"" for kept in inside.tolist()]
    redo = {i for i, kept in enumerate(inside.tolist()) if not kept}
    redo.update(np.flatnonzero(inside)[list(outside)].tolist())
    for i in redo:
        out[i] = bounded_tsvector(_joined(papers[i]))
    return out


_WEIGHTS = (3 << 14, 2 << 14, 1 << 14)  # A (title), B (abstract), C (authors): a position's top two bits


def bounded_tsvector(fields: Fields) -> bytes:
    """The tsvector `setweight(to_tsvector('simple', title_words), 'A') || ... 'B' || ... 'C'` of a paper's
    words (index_words), in PostgreSQL's binary form, built here: PostgreSQL's parser was most of a paper's
    ingest cost. Each column's positions start after the largest of the columns before (as `||` shifts them).
    Equal to PostgreSQL's own, bounds included (tests/store/test_postgres_ingest.py compares them). One paper at a
    time, in Python: for the rare paper outside the bounds, and as the reference tsvectors.py is tested against."""
    lexemes: dict[str, list[int]] = {}
    shift = 0
    for text, weight in zip(fields, _WEIGHTS, strict=True):
        column: dict[str, list[int]] = {}
        at = 0
        for word in text.split():
            if len(word) > MAX_LEXEME:
                continue
            at += 1
            held = column.setdefault(word, [])
            if len(held) < MAX_POSITIONS and (not held or held[-1] < MAX_POSITION):
                held.append(min(at, MAX_POSITION))
        for word, positions in column.items():
            merged = lexemes.setdefault(word, [])
            for position in positions:
                shifted = min(position + shift, MAX_POSITION)
                if not merged or merged[-1] & MAX_POSITION < shifted:
                    merged.append(weight | shifted)
        if column:
            shift = min(shift + max(p[-1] for p in column.values()), MAX_POSITION)
    parts = [
        word.encode() + b"\0" + struct.pack(f"!H{len(positions)}H", len(positions), *positions)
        for word, positions in lexemes.items()
    ]
    return struct.pack("!i", len(parts)) + b"".join(parts)


class _Stems:
    """Folded word -> the id of its encoded FTS5 stem in `lexicon`. The vocabulary repeats from paper to paper:
    FTS5's Porter stemmer is asked once per word (reading FTS5's index back for every paper was four times
    slower than the whole of this)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.by_stem: dict[str, int] = {}
        self.stems: list[str] = []  # id -> encoded stem
        self.lexicon = Lexicon()

    def learn(self, words: Collection[str]) -> None:
        """Ask FTS5 for the stem of each word (all new): a folded word is one token of PAPERS_TOKENIZER."""
        todo = sorted(words)
        added: list[bytes] = []
        with closing(_scratch()) as db:
            db.executemany("INSERT INTO t (rowid, title) VALUES (?, ?)", enumerate(todo))
            for doc, term in db.execute("SELECT doc, term FROM v"):
                stem = encode(term)
                lexeme = self.by_stem.get(stem)
                if lexeme is None:
                    lexeme = self.by_stem[stem] = len(self.stems)
                    self.stems.append(stem)
                    added.append(stem.encode())
                self.ids[todo[doc]] = lexeme
        self.lexicon.add(added)


_stems = _Stems()
_KEPT = (
    1_000_000  # folded words (about 150 MB at most), forgotten wholesale beyond: a million papers hold more
)
assert _KEPT < 1 << LEXEME_BITS  # a lexeme's id fits its bits of tsvectors.py's sort key
_LOCK = threading.Lock()  # a page at a time: pages come from threads (asyncio.to_thread)


def _folded(paper: Fields) -> Folded:
    """A paper's words per column as the folding tokenizer makes them (fold_words is its exact twin)."""
    return fold_words(paper[0]), fold_words(paper[1]), fold_words(paper[2])


def _page(papers: list[Folded]) -> list[bytes]:
    """The tsvectors of papers' folded words. Called holding _LOCK."""
    ids = _ids(list(chain.from_iterable(chain.from_iterable(papers))), divisible=len(papers) > 1)
    if ids is None:  # too many distinct words for the lexicon at once
        half = len(papers) // 2
        return _page(papers[:half]) + _page(papers[half:])
    return _tsvectors(papers, ids)


def _ids(words: list[str], *, divisible: bool = False) -> Ints | None:
    """Each word's lexeme id, the stems of words not seen yet asked of FTS5's own Porter stemmer (`_Stems`),
    the lexicon started anew when it would grow past its bound; None when the words alone are too many and the
    caller can divide them (one paper's are taken whole: so many words are past PostgreSQL's bounds anyway, and
    such a paper's tsvector is built without tsvectors.py, which needs ids below 2**20)."""
    global _stems
    ids = np.fromiter(map(_stems.ids.get, words, repeat(-1)), np.int64, len(words))
    missing = np.flatnonzero(ids < 0).tolist()
    if not missing:
        return ids
    unknown = {words[i] for i in missing}
    if len(_stems.ids) + len(unknown) <= _KEPT:
        _stems.learn(unknown)
        ids[missing] = [_stems.ids[words[i]] for i in missing]
        return ids
    distinct = set(words)
    if len(distinct) > _KEPT and divisible:
        return None
    _stems = _Stems()
    _stems.learn(distinct)
    return np.fromiter(map(_stems.ids.__getitem__, words), np.int64, len(words))


@lru_cache(maxsize=4096)
def query_words(text: str) -> tuple[str, ...]:
    """The words FTS5 makes of a query string (folded and stemmed, not yet encoded)."""
    with closing(_scratch()) as db:
        db.execute("INSERT INTO t (rowid, title) VALUES (1, ?)", (text,))
        return tuple(r[0] for r in db.execute("SELECT term FROM v ORDER BY offset"))

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
from collections.abc import Sequence
from contextlib import closing
from functools import lru_cache

from bot.fts_tokenizer import PAPERS_TOKENIZER

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


def index_words(papers: Sequence[Fields]) -> list[Fields]:
    """For each paper, the encoded words FTS5 indexes in its title, abstract and authors, in order."""
    words: list[list[list[str]]] = [[[], [], []] for _ in papers]
    with closing(_scratch()) as db:
        db.executemany(
            "INSERT INTO t (rowid, title, abstract, authors) VALUES (?, ?, ?, ?)",
            [(i, *fields) for i, fields in enumerate(papers)],
        )
        for term, doc, column in db.execute("SELECT term, doc, col FROM v ORDER BY doc, col, offset"):
            words[doc][["title", "abstract", "authors"].index(column)].append(encode(term))
    return [(" ".join(t), " ".join(a), " ".join(au)) for t, a, au in words]


@lru_cache(maxsize=4096)
def query_words(text: str) -> tuple[str, ...]:
    """The words FTS5 makes of a query string (folded and stemmed, not yet encoded)."""
    with closing(_scratch()) as db:
        db.execute("INSERT INTO t (rowid, title) VALUES (1, ?)", (text,))
        return tuple(r[0] for r in db.execute("SELECT term FROM v ORDER BY offset"))


def snippets(
    fts: str, abstracts: Sequence[Fields], start: str, end: str, *, fallback_chars: int = 240
) -> list[str]:
    """An excerpt of each abstract with the words the FTS5 expression matched between `start` and `end`,
    exactly as the SQLite store's search shows it; a paper the expression does not match (the PostgreSQL
    prefilter may be broader) gets the abstract's beginning."""
    found: dict[int, str] = {}
    with closing(_scratch()) as db:
        db.executemany(
            "INSERT INTO t (rowid, title, abstract, authors) VALUES (?, ?, ?, ?)",
            [(i, *fields) for i, fields in enumerate(abstracts)],
        )
        try:
            rows = db.execute(
                "SELECT rowid, snippet(t, 1, ?, ?, '…', 24) FROM t WHERE t MATCH ?", (start, end, fts)
            ).fetchall()
        except sqlite3.Error:
            rows = []
        found = {r[0]: r[1] for r in rows}
    return [found.get(i, fields[1][:fallback_chars]) for i, fields in enumerate(abstracts)]

"""A search hit's snippet: the abstract around the words an FTS5 expression matched, cut by FTS5's own snippet()
over a table in memory that holds just the hits shown.

Both stores cut snippets here. On SQLite, asking the store's own index cost a seek per hit through every
segment of the word's entries (20 ms for a page of 50 at a million papers, 3 ms at 10,000); the hits' text is
already read, and indexing 50 papers in memory costs the same at any size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing

from bot.fts_tokenizer import PAPERS_TOKENIZER

Fields = tuple[str, str, str]  # title, abstract, authors (names joined with ", "), as papers_fts indexes them
TOKENS = 24  # words per snippet, as the store's search has always shown


def snippets(
    fts: str, papers: Sequence[Fields], start: str, end: str, *, fallback_chars: int = 240
) -> list[str]:
    """An excerpt of each abstract with the words the FTS5 expression matched between `start` and `end`,
    exactly as FTS5's snippet() cuts it from the store's index; a paper the expression does not match (a
    PostgreSQL prefilter may be broader) gets the abstract's beginning. CPU-bound: call it in a thread."""
    found: dict[int, str] = {}
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(title, abstract, authors, tokenize='{PAPERS_TOKENIZER}')"
        )
        db.executemany(
            "INSERT INTO t (rowid, title, abstract, authors) VALUES (?, ?, ?, ?)",
            [(i, *fields) for i, fields in enumerate(papers)],
        )
        try:
            rows = db.execute(
                f"SELECT rowid, snippet(t, 1, ?, ?, '…', {TOKENS}) FROM t WHERE t MATCH ?", (start, end, fts)
            ).fetchall()
        except sqlite3.Error:
            rows = []
        found = {r[0]: r[1] for r in rows}
    return [found.get(i, fields[1][:fallback_chars]) for i, fields in enumerate(papers)]

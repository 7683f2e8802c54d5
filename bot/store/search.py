"""Full-text search over the stored papers: FTS5 with bm25 ranking and a highlighted snippet."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.models import HIGHLIGHT_END, HIGHLIGHT_START, Paper, SearchHit
from bot.store.database import Database
from bot.store.papers import paper_filter, paper_from_row, to_ts

# bm25 weights per column (title, abstract, authors): a hit in the title says most about a paper.
_BM25 = "bm25(papers_fts, 4.0, 1.0, 2.0)"


class SearchRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def ranked(
        self,
        fts: str | None,
        *,
        topic_id: int | None = None,
        including: Sequence[int] = (),
        categories: Sequence[str] = (),
        since: datetime | None = None,
        limit: int = 200,
        offset: int = 0,
    ) -> list[SearchHit]:
        """Best matches first (newest first when there is no text to rank by), from the `offset`-th on.
        Callers confirm each hit with the query's exact evaluator: FTS5 is a prefilter that may return more
        (an ANDNOT part, an id or a category prefix are left to the evaluator). `including`: topics whose
        papers count as the topic's too (a server's own topics under a catalog topic)."""
        if limit < 0 or offset < 0:  # SQLite reads LIMIT -1 as "no limit"
            raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since
        )
        if fts is None:
            rows = await self.db.fetchall(
                f"SELECT p.*, substr(p.abstract, 1, 240) AS snip FROM papers p WHERE 1{where}"
                " ORDER BY p.published DESC, p.pk DESC LIMIT ? OFFSET ?",
                (*params, limit, offset),
            )
        else:
            rows = await self.db.fetchall(
                f"SELECT p.*, snippet(papers_fts, 1, ?, ?, '…', 24) AS snip FROM papers_fts"
                f" JOIN papers p ON p.pk = papers_fts.rowid WHERE papers_fts MATCH ?{where}"
                f" ORDER BY {_BM25}, p.pk LIMIT ? OFFSET ?",
                (HIGHLIGHT_START, HIGHLIGHT_END, fts, *params, limit, offset),
            )
        return [SearchHit(paper_from_row(r), r["snip"]) for r in rows]

    async def papers_holding(self, words: Sequence[str], *, cap: int) -> dict[str, int]:
        """How many papers hold each word (folded; the index stems it), counted up to `cap`: one bounded read
        of the word's entries per word, however common it is (an exact count of a word every paper holds
        reads its million entries)."""
        found: dict[str, int] = {}
        for word in dict.fromkeys(words):
            row = await self.db.fetchone(
                "SELECT count(*) FROM (SELECT rowid FROM papers_fts WHERE papers_fts MATCH ? LIMIT ?)",
                (f'"{word}"', cap),
            )
            found[word] = int(row[0]) if row else 0
        return found

    async def in_window(
        self,
        *,
        topic_id: int,
        including: Sequence[int] = (),
        start: datetime,
        end: datetime,
        limit: int,
    ) -> list[Paper]:
        """The topic's papers (with those of the topics `including` adds) first submitted in [start, end): at
        most `limit`, in a fixed pseudo-random order (a hash of the row), so that a sample of a busy window
        spreads over all of it."""
        if limit < 0:
            raise ValueError(f"limit must not be negative (got {limit})")
        where, params = paper_filter(topic_id=topic_id, including=including, since=start)
        rows = await self.db.fetchall(
            f"SELECT p.* FROM papers p WHERE p.published < ?{where}"
            " ORDER BY (p.pk * 2654435761) % 4294967296, p.pk LIMIT ?",
            (to_ts(end), *params, limit),
        )
        return [paper_from_row(r) for r in rows]

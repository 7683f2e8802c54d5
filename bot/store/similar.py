"""Candidates for "Similar": the stored papers sharing a paper's most telling words, found by the full-text
index, so that comparing features stays bounded however large the history is."""

from __future__ import annotations

from bot.models import Paper
from bot.store.database import Database
from bot.store.papers import paper_from_row

# bm25 weights per column (title, abstract, authors): as /search, a shared title word says most.
_BM25 = "bm25(papers_fts, 4.0, 1.0, 0.0)"


class SimilarRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def candidates(self, arxiv_id: str, words: list[str], *, limit: int) -> list[Paper]:
        """Up to `limit` stored papers other than `arxiv_id` holding any of `words` in title or abstract,
        those sharing the most (by bm25) first. Words are matched as quoted terms: nothing in them is
        read as FTS5 syntax."""
        if not words or limit <= 0:
            return []
        terms = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        # Ranked in the index alone, then the few papers read by key: joining first would read the row of
        # every paper holding any of the words (tens of thousands at 1M papers) before keeping `limit`.
        ranked = await self.db.fetchall(
            f"SELECT rowid FROM papers_fts WHERE papers_fts MATCH ? ORDER BY {_BM25} LIMIT ?",
            (f"{{title abstract}} : ({terms})", limit + 1),
        )
        order = [r[0] for r in ranked]
        if not order:
            return []
        rows = await self.db.fetchall(
            f"SELECT * FROM papers WHERE pk IN ({','.join('?' * len(order))})", order
        )
        by_pk = {r["pk"]: paper_from_row(r) for r in rows}
        found = [by_pk[pk] for pk in order if pk in by_pk]
        return [p for p in found if p.arxiv_id != arxiv_id][:limit]

"""Candidates for "Similar" on PostgreSQL: the stored papers sharing a paper's most telling words, found by the
`words` index (bot/store/similar.py), so that comparing features stays bounded however large the history is."""

from __future__ import annotations

from bot.models import Paper
from bot.store.postgres.database import Database
from bot.store.postgres.fts_query import to_tsquery
from bot.store.postgres.papers import PAPER, paper

# ts_rank_cd's weights for {D, C, B, A}: title (A) 4, abstract (B) 1, authors (C) 0, as the SQLite store's bm25.
_WEIGHTS = "{0.0, 0.0, 0.25, 1.0}"


class SimilarRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def candidates(self, arxiv_id: str, words: list[str], *, limit: int) -> list[Paper]:
        """Up to `limit` stored papers other than `arxiv_id` holding any of `words` in title or abstract,
        those sharing the most first. The words go through the same translation as a topic's prefilter, as
        quoted terms: nothing in them is read as query syntax."""
        if not words or limit <= 0:
            return []
        terms = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        tsquery = to_tsquery(f"{{title abstract}} : ({terms})")
        if tsquery is None:  # no word the index holds: nothing to share
            return []
        # Ranked on the index's vectors alone, then the few papers read by key.
        ranked = await self.db.fetchall(
            "SELECT p.pk FROM papers p WHERE p.words @@ ?::tsquery"
            f" ORDER BY ts_rank_cd('{_WEIGHTS}', p.words, ?::tsquery) DESC, p.pk LIMIT ?",
            (tsquery, tsquery, limit + 1),
        )
        order = [r[0] for r in ranked]
        if not order:
            return []
        rows = await self.db.fetchall(f"SELECT {PAPER} FROM papers p WHERE p.pk = ANY(?::bigint[])", (order,))
        by_pk = {r["pk"]: paper(r) for r in rows}
        found = [by_pk[pk] for pk in order if pk in by_pk]
        return [p for p in found if p.arxiv_id != arxiv_id][:limit]

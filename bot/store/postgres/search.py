"""Full-text search on PostgreSQL: the `words` tsvector (GIN), ranked by ts_rank_cd with the title weighing most,
and the SQLite store's highlighted snippet."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

from bot.models import HIGHLIGHT_END, HIGHLIGHT_START, SearchHit
from bot.store.postgres.database import Database
from bot.store.postgres.fts_query import to_tsquery
from bot.store.postgres.papers import PAPER, paper, paper_filter
from bot.store.postgres.tokens import snippets

# ts_rank_cd's weights for {D, C, B, A}: title (A) 4, authors (C) 2, abstract (B) 1, as the SQLite store's bm25.
_WEIGHTS = "{0.0, 0.5, 0.25, 1.0}"


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
        """Best matches first (newest first without text to rank by), from the `offset`-th on. Callers confirm
        each hit with the query's exact evaluator: the tsquery may let more through (see fts_query.py)."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since
        )
        tsquery = to_tsquery(fts)
        if tsquery is None:
            order = "p.published DESC, p.pk DESC"
        else:
            where += " AND p.words @@ ?::tsquery"
            params.append(tsquery)
            order = f"ts_rank_cd('{_WEIGHTS}', p.words, ?::tsquery) DESC, p.pk"
            params.append(tsquery)
        rows = await self.db.fetchall(
            f"SELECT {PAPER} FROM papers p WHERE TRUE{where} ORDER BY {order} LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        found = [paper(r) for r in rows]
        if fts is None:
            snips = [p.abstract[:240] for p in found]
        else:
            fields = [(p.title, p.abstract, ", ".join(a.name for a in p.authors)) for p in found]
            snips = await asyncio.to_thread(snippets, fts, fields, HIGHLIGHT_START, HIGHLIGHT_END)
        return [SearchHit(p, s) for p, s in zip(found, snips, strict=True)]

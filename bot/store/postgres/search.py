"""Full-text search on PostgreSQL: the `words` tsvector (GIN), ranked by ts_rank_cd with the title weighing most,
and the SQLite store's highlighted snippet.

As on SQLite (bot/store/search.py), every read costs what a page of results costs, not what the number of
matches costs: ranking runs within the newest `pool` candidates, snippets are cut for the hits shown only, and
counts stop at a cap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bot.models import HIGHLIGHT_END, HIGHLIGHT_START, Paper, SearchHit
from bot.store.papers import to_ts
from bot.store.postgres.database import Database
from bot.store.postgres.fts_query import to_tsquery
from bot.store.postgres.papers import PAPER, paper, paper_filter
from bot.store.snippets import snippets

# ts_rank_cd's weights for {D, C, B, A}: title (A) 4, authors (C) 2, abstract (B) 1, as the SQLite store's bm25.
_WEIGHTS = "{0.0, 0.5, 0.25, 1.0}"
_RANK = f"ts_rank_cd('{_WEIGHTS}', p.words, ?::tsquery)"
_NO_TEXT_SNIPPET = 240  # characters of the abstract shown when there are no words to highlight


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
        snippets: bool = True,
        suggested: bool = False,
    ) -> list[SearchHit]:
        """Best matches first (newest first without text to rank by), from the `offset`-th on. Callers confirm
        each hit with the query's exact evaluator: the tsquery may let more through (see fts_query.py). Without
        `snippets`, hits with text carry an empty snippet: `with_snippets` cuts them for the hits kept."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since, suggested=suggested
        )
        tsquery = to_tsquery(fts)
        if tsquery is None:
            order = "p.published DESC, p.pk DESC"
        else:
            where += " AND p.words @@ ?::tsquery"
            params.append(tsquery)
            order = f"{_RANK} DESC, p.pk"
            params.append(tsquery)
        rows = await self.db.fetchall(
            f"SELECT {PAPER} FROM papers p WHERE TRUE{where} ORDER BY {order} LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        hits = [SearchHit(paper(r), "") for r in rows]
        if fts is None or snippets:
            return await self.with_snippets(fts, hits)
        return hits

    async def ranked_ids(
        self,
        fts: str,
        *,
        topic_id: int | None = None,
        including: Sequence[int] = (),
        categories: Sequence[str] = (),
        since: datetime | None = None,
        pool: int,
        deadline: float | None = None,
    ) -> list[int]:
        """The newest `pool` candidates' row ids, best first: ranked once, then read a page at a time with
        `hits`. Stopped by the server once the clock passes `deadline`: ReadTimedOut."""
        if pool < 0:
            raise ValueError(f"pool must not be negative (got {pool})")
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since
        )
        tsquery = to_tsquery(fts)
        if tsquery is None:  # no text condition: the newest, as they come
            rows = await self.db.fetchall(
                f"SELECT p.pk FROM papers p WHERE TRUE{where} ORDER BY p.pk DESC LIMIT ?",
                (*params, pool),
                deadline=deadline,
            )
            return [int(row[0]) for row in rows]
        # The newest `pool` first, then ranked in the outer query: only they are ranked, however many match.
        rows = await self.db.fetchall(
            f"SELECT pk FROM (SELECT p.pk, p.words FROM papers p WHERE p.words @@ ?::tsquery{where}"
            f" ORDER BY p.pk DESC LIMIT ?) AS p ORDER BY {_RANK} DESC, pk",
            (tsquery, *params, pool, tsquery),
            deadline=deadline,
        )
        return [int(row[0]) for row in rows]

    async def hits(self, pks: Sequence[int]) -> list[SearchHit]:
        """The papers of these row ids, in that order, as hits without a snippet (`with_snippets`)."""
        if not pks:
            return []
        rows = await self.db.fetchall(
            f"SELECT {PAPER} FROM papers p WHERE p.pk = ANY(?::bigint[])", ([int(pk) for pk in pks],)
        )
        by_pk = {row["pk"]: row for row in rows}
        return [SearchHit(paper(by_pk[pk]), "") for pk in pks if pk in by_pk]

    async def with_snippets(self, fts: str | None, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits with their snippet: the abstract around the words `fts` matched, between HIGHLIGHT_START
        and HIGHLIGHT_END (the abstract's start when there is no text), cut for these hits only."""
        if not hits:
            return hits
        if fts is None:
            snips = [h.paper.abstract[:_NO_TEXT_SNIPPET] for h in hits]
        else:
            fields = [
                (h.paper.title, h.paper.abstract, ", ".join(a.name for a in h.paper.authors)) for h in hits
            ]
            snips = await asyncio.to_thread(snippets, fts, fields, HIGHLIGHT_START, HIGHLIGHT_END)
        return [replace(h, snippet=s) for h, s in zip(hits, snips, strict=True)]

    async def count(
        self,
        fts: str | None,
        *,
        topic_id: int | None = None,
        including: Sequence[int] = (),
        categories: Sequence[str] = (),
        since: datetime | None = None,
        cap: int,
        deadline: float | None = None,
    ) -> int:
        """How many papers pass the prefilter and the filters, counted up to `cap` (so asking costs at most
        `cap` rows however broad the query is). Stopped once the clock passes `deadline`: ReadTimedOut."""
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since
        )
        tsquery = to_tsquery(fts)
        if tsquery is not None:
            where += " AND p.words @@ ?::tsquery"
            params.append(tsquery)
        row = await self.db.fetchone(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM papers p WHERE TRUE{where} LIMIT ?) AS found",
            (*params, cap),
            deadline=deadline,
        )
        return int(row[0]) if row else 0

    async def papers_holding(self, words: Sequence[str], *, cap: int) -> dict[str, int]:
        """How many papers hold each word (folded; stemmed as the index is), counted up to `cap`: one bounded
        read per word, however common it is."""
        found: dict[str, int] = {}
        for word in dict.fromkeys(words):
            tsquery = to_tsquery(f'"{word}"')
            if tsquery is None:  # no word the index would hold
                found[word] = 0
                continue
            row = await self.db.fetchone(
                "SELECT COUNT(*) FROM (SELECT 1 FROM papers p WHERE p.words @@ ?::tsquery LIMIT ?) AS found",
                (tsquery, cap),
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
        most `limit`, in a fixed pseudo-random order (the SQLite store's hash of the row), so that a sample of
        a busy window spreads over all of it."""
        if limit < 0:
            raise ValueError(f"limit must not be negative (got {limit})")
        where, params = paper_filter(topic_id=topic_id, including=including, since=start)
        rows = await self.db.fetchall(
            f"SELECT {PAPER} FROM papers p WHERE p.published < ?{where}"
            " ORDER BY (p.pk * 2654435761) % 4294967296, p.pk LIMIT ?",
            (to_ts(end), *params, limit),
        )
        return [paper(r) for r in rows]

"""Full-text search over the stored papers: FTS5 with bm25 ranking and a highlighted snippet.

Every read here costs what a page of results costs, not what the number of matches costs: a word in 90% of a
million papers matches 900,000 of them, and ranking them all took seconds. Ranking runs within a bounded pool
(the newest `pool` candidates, which FTS5 yields in rowid order and stops after), snippets are cut for the hits
shown only, a bare category reads its own index newest first, and counts stop at a cap. In a big store, a query
of one phrase is ranked within the newest papers' own index (bot/store/recent_fts.py), where bm25's count of the
papers holding the phrase stays small, in the order bm25 gives over the whole index.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bot.models import HIGHLIGHT_END, HIGHLIGHT_START, Paper, SearchHit
from bot.store.bm25 import WEIGHTS, average_length, bm25_order, varint_sum
from bot.store.database import Database
from bot.store.papers import paper_filter, paper_from_row, to_ts
from bot.store.recent_fts import RecentWindow
from bot.store.snippets import snippets

_BM25 = f"bm25(papers_fts, {', '.join(map(str, WEIGHTS))})"
# One word (or prefix) within one short column, as `ti:dodo` or `au:smith` give it: bm25 applies the filter by
# decoding the positions of every paper holding the word to count them (58 ms for a word in nearly every one of
# 1M papers, 3 ms at 10k). Ranked here from the pool's own positions instead (`_rank_one_word`) once at least
# _OWN_RANK_FROM papers hold the word (13 ms for 2,000 candidates, whatever the store's size).
_ONE_WORD_IN_COLUMN = re.compile(r'(title|authors) : ("[^"\s]+"\*?)')
_NAMES = ("title", "abstract", "authors")
_COLUMNS = {name: i for i, name in enumerate(_NAMES)}
_OWN_RANK_FROM = 100_000
# One phrase (a word, a prefix, words in a row), in every column or in one. Its bm25 order does not depend on how
# many papers hold it (one phrase, one idf: a factor common to every paper), so its pool is ranked within the
# window of the newest papers (bot/store/recent_fts.py) once the store holds _RECENT_FROM papers: below that, bm25's
# count over the whole index costs less than what the window's ranking adds (~3 ms for 2,000 candidates).
_ONE_PHRASE = re.compile(r'(?:(?:title|abstract|authors) : )?"(?:[^"]|"")*"\*?')
_RECENT_FROM = 100_000
_NO_TEXT_SNIPPET = 240  # characters of the abstract shown when there are no words to highlight
_MAX_CATEGORY_ARMS = 16  # categories read index by index; more (rare) fall back to one filtered scan


class SearchRepo:
    def __init__(
        self, db: Database, *, own_rank_from: int = _OWN_RANK_FROM, recent_from: int = _RECENT_FROM
    ) -> None:
        self.db = db
        self.own_rank_from = own_rank_from  # papers holding a word in a column ranked here, not by bm25
        self.recent_from = recent_from  # papers stored from which one phrase is ranked in the newest's window
        self.recent = RecentWindow(db)

    async def close(self) -> None:
        await self.recent.close()

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
        """Best matches first (newest first when there is no text to rank by), from the `offset`-th on.
        Callers confirm each hit with the query's exact evaluator: FTS5 is a prefilter that may return more
        (an ANDNOT part, an id or a category prefix are left to the evaluator). `including`: topics whose
        papers count as the topic's too (a server's own topics under a catalog topic). This ranks every
        candidate: /search ranks a bounded pool instead (`ranked_ids`). Without `snippets`, hits carry an
        empty snippet: `with_snippets` cuts them for the hits kept."""
        if limit < 0 or offset < 0:  # SQLite reads LIMIT -1 as "no limit"
            raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
        if fts is None:
            return await self._newest(topic_id, including, categories, since, limit, offset, suggested)
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since, suggested=suggested
        )
        rows = await self.db.fetchall(
            f"SELECT p.*, {_BM25} AS score FROM papers_fts"
            f" JOIN papers p ON p.pk = papers_fts.rowid WHERE papers_fts MATCH ?{where}"
            " ORDER BY score, p.pk LIMIT ? OFFSET ?",
            (fts, *params, limit, offset),
        )
        hits = [SearchHit(paper_from_row(r), "") for r in rows]
        return await self.with_snippets(fts, hits) if snippets else hits

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
        `hits` (ranking again for each page cost a NOT query, whose pages are mostly rejected, 4x). Every read
        stops once the clock passes `deadline`, raising ReadTimedOut: FTS5 finds a prefix most words start
        with (`dodo*`) by merging all their entries, seconds at a million papers, before it ranks any."""
        if pool < 0:
            raise ValueError(f"pool must not be negative (got {pool})")
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since
        )
        joined = f" JOIN papers p ON p.pk = papers_fts.rowid WHERE papers_fts MATCH ?{where}"
        source = joined if where else " WHERE papers_fts MATCH ?"
        if _ONE_PHRASE.fullmatch(fts):
            in_window = await self.recent.ranked(
                fts, where, params, pool, from_papers=self.recent_from, deadline=deadline
            )
            if in_window is not None:
                return in_window
        one_word = _ONE_WORD_IN_COLUMN.fullmatch(fts)
        if one_word is not None and await self._held_by_many(one_word[2], deadline):
            return await self._rank_one_word(fts, _COLUMNS[one_word[1]], source, params, pool, deadline)
        rows = await self.db.fetchall(
            f"SELECT pk FROM (SELECT papers_fts.rowid AS pk, {_BM25} AS score FROM papers_fts{source}"
            " ORDER BY papers_fts.rowid DESC LIMIT ?) ORDER BY score, pk",
            (fts, *params, pool),
            deadline=deadline,
        )
        return [row[0] for row in rows]

    async def _held_by_many(self, word: str, deadline: float | None) -> bool:
        """Whether at least `own_rank_from` papers hold the word in any column (read up to that many entries,
        without positions: 4 ms at most for 100,000)."""
        row = await self.db.fetchone(
            "SELECT count(*) FROM (SELECT rowid FROM papers_fts WHERE papers_fts MATCH ? LIMIT ?)",
            (word, self.own_rank_from),
            deadline=deadline,
        )
        return row is not None and row[0] >= self.own_rank_from

    async def _rank_one_word(
        self,
        fts: str,
        column: int,
        source: str,
        params: Sequence[object],
        pool: int,
        deadline: float | None,
    ) -> list[int]:
        """bm25's order of the pool for a query of one word in one column, from each candidate's own data:
        its hits (highlight() marks each; FTS5 reports the same instances to bm25), its size in tokens (the
        docsize record) and the average size (the averages record). One phrase has one idf, the same for
        every paper, so the order needs no count of the papers holding it."""
        rows = await self.db.fetchall(
            f"SELECT papers_fts.rowid, d.sz, highlight(papers_fts, {column}, char(1), ''),"
            f" papers_fts.{_NAMES[column]} FROM papers_fts"
            f" JOIN papers_fts_docsize d ON d.id = papers_fts.rowid{source}"
            " ORDER BY papers_fts.rowid DESC LIMIT ?",
            (fts, *params, pool),
            deadline=deadline,
        )
        totals = await self.db.fetchone("SELECT block FROM papers_fts_data WHERE id = 1")
        if not rows or totals is None:
            return [row[0] for row in rows]
        weight = WEIGHTS[column]
        scored = [
            # a mark per hit, besides any such character the text holds itself
            (
                pk,
                weight * ((marked or "").count("\x01") - (text or "").count("\x01")),
                float(varint_sum(size)),
            )
            for pk, size, marked, text in rows
        ]
        return bm25_order(scored, average_length(totals[0]))

    async def hits(self, pks: Sequence[int]) -> list[SearchHit]:
        """The papers of these row ids, in that order, as hits without a snippet (`with_snippets`)."""
        if not pks:
            return []
        rows = await self.db.fetchall(
            f"SELECT * FROM papers WHERE pk IN ({','.join('?' * len(pks))})", tuple(pks)
        )
        by_pk = {row["pk"]: row for row in rows}
        return [SearchHit(paper_from_row(by_pk[pk]), "") for pk in pks if pk in by_pk]

    async def with_snippets(self, fts: str | None, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits with their snippet: the abstract around the words `fts` matched, between HIGHLIGHT_START
        and HIGHLIGHT_END (the abstract's start when there is no text), cut for these hits only from the text
        they carry (bot/store/snippets.py): asking the store's index seeks each hit through every segment."""
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
        `cap` rows however broad the query is, once FTS5 has found them: a prefix most words start with takes
        seconds at a million papers). Stopped once the clock passes `deadline`: ReadTimedOut."""
        where, params = paper_filter(
            topic_id=topic_id, including=including, categories=categories, since=since
        )
        if fts is not None:
            source = "papers_fts WHERE papers_fts MATCH ?"
            if where:
                source = (
                    f"papers_fts JOIN papers p ON p.pk = papers_fts.rowid WHERE papers_fts MATCH ?{where}"
                )
            sql, args = f"SELECT 1 FROM {source} LIMIT ?", (fts, *params, cap)
        elif categories and len(categories) <= _MAX_CATEGORY_ARMS:
            arms, args_list = self._category_arms(topic_id, including, categories, since, cap, False)
            sql, args = f"SELECT DISTINCT pk FROM ({arms}) LIMIT ?", (*args_list, cap)
        else:
            sql, args = f"SELECT 1 FROM papers p WHERE 1{where} LIMIT ?", (*params, cap)
        row = await self.db.fetchone(f"SELECT COUNT(*) FROM ({sql})", args, deadline=deadline)
        return int(row[0]) if row else 0

    # ---- no text: newest first ---------------------------------------------------------------------------

    def _category_arms(
        self,
        topic_id: int | None,
        including: Sequence[int],
        categories: Sequence[str],
        since: datetime | None,
        each: int,
        suggested: bool,
    ) -> tuple[str, list[object]]:
        """The newest `each` papers of every category, one index range each (category, published, paper)
        read backwards, as a UNION ALL of (pk, published): the newest N of their union are among them."""
        where, params = paper_filter(topic_id=topic_id, including=including, suggested=suggested)
        arms: list[str] = []
        args: list[object] = []
        for category in categories:
            bound = ""
            if since is not None:
                bound = " AND c.published >= ?"
            joined = " JOIN papers p ON p.pk = c.paper_pk" if where else ""  # the index alone, when it can
            arms.append(
                "SELECT * FROM (SELECT c.paper_pk AS pk, c.published AS published FROM paper_categories c"
                f"{joined} WHERE c.category = ?{bound}{where}"
                " ORDER BY c.published DESC, c.paper_pk DESC LIMIT ?)"
            )
            args += [category, *([to_ts(since)] if since is not None else []), *params, each]
        return " UNION ALL ".join(arms), args

    async def _newest(
        self,
        topic_id: int | None,
        including: Sequence[int],
        categories: Sequence[str],
        since: datetime | None,
        limit: int,
        offset: int,
        suggested: bool,
    ) -> list[SearchHit]:
        if categories and len(categories) <= _MAX_CATEGORY_ARMS:
            # Filtering every paper by "is in one of these categories" made SQLite build the set of all of a
            # category's papers first (0.9 s for cs.LG at 1M); each category's own index is already newest first.
            arms, args = self._category_arms(
                topic_id, including, categories, since, offset + limit, suggested
            )
            rows = await self.db.fetchall(
                f"WITH newest AS (SELECT pk, MAX(published) AS published FROM ({arms}) GROUP BY pk"
                " ORDER BY published DESC, pk DESC LIMIT ? OFFSET ?)"
                f" SELECT p.*, substr(p.abstract, 1, {_NO_TEXT_SNIPPET}) AS snip FROM newest"
                " JOIN papers p ON p.pk = newest.pk ORDER BY newest.published DESC, p.pk DESC",
                (*args, limit, offset),
            )
        else:
            where, params = paper_filter(
                topic_id=topic_id,
                including=including,
                categories=categories,
                since=since,
                suggested=suggested,
            )
            rows = await self.db.fetchall(
                f"SELECT p.*, substr(p.abstract, 1, {_NO_TEXT_SNIPPET}) AS snip FROM papers p WHERE 1{where}"
                " ORDER BY p.published DESC, p.pk DESC LIMIT ? OFFSET ?",
                (*params, limit, offset),
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

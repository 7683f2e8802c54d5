"""Paper rows: batched upserts that keep first-seen times, lookups, and per-category counts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime

import aiosqlite

from bot.models import Announcement, Author, Paper, UpsertResult
from bot.store.announcements import HEADLINE, headline_from
from bot.store.database import Database

DAY = 86_400
_CHUNK = 500  # SQLite's default limit on host parameters is 32766; stay well below it per IN (...)

_COLUMNS = (
    "arxiv_id, version, title, abstract, authors, authors_json, primary_category, categories, "
    "published, updated, comment, journal_ref, doi, authors_omitted, provisional"
)
_INSERT = f"INSERT INTO papers ({_COLUMNS}, first_seen, last_changed) VALUES ({', '.join('?' * 17)})"
# published keeps the earliest value seen: the v1 submission time. A source that knows only announcement
# dates (RSS) must not move a paper forward in time, which would move it between momentum windows; the v1
# time, once a full copy brings it, moves a provisional date back (and the paper's topic matches with it).
_UPDATE = (
    "UPDATE papers SET version = ?, title = ?, abstract = ?, authors = ?, authors_json = ?, "
    "primary_category = ?, categories = ?, published = MIN(published, ?), updated = ?, comment = ?, journal_ref = ?, doi = ?, "
    "authors_omitted = ?, provisional = ?, last_changed = ? WHERE arxiv_id = ?"
)
_LINK_CATEGORIES = (
    "INSERT OR IGNORE INTO paper_categories (category, published, paper_pk) "
    "SELECT ?, published, pk FROM papers WHERE arxiv_id = ?"
)


def paper_filter(
    *,
    topic_id: int | None = None,
    including: Sequence[int] = (),
    categories: Sequence[str] = (),
    since: datetime | None = None,
    suggested: bool = False,
) -> tuple[str, list[object]]:
    """SQL conditions on papers aliased `p` (" AND ..." each, or "") and their parameters: matched by a topic
    (or one of the topics `including` adds to it; with `suggested`, its learned scorer's suggestions count
    too), of any of the categories, submitted since a time."""
    clauses: list[str] = []
    params: list[object] = []
    if topic_id is not None:
        ids = [topic_id, *including]
        clauses.append(
            f"p.pk IN (SELECT paper_pk FROM topic_matches WHERE topic_id IN ({','.join('?' * len(ids))})"
            + ("" if suggested else " AND kind = 'exact'")
            + ")"
        )
        params.extend(ids)
    if categories:
        marks = ",".join("?" * len(categories))
        clauses.append(f"p.pk IN (SELECT paper_pk FROM paper_categories WHERE category IN ({marks}))")
        params.extend(categories)
    if since is not None:
        clauses.append("p.published >= ?")
        params.append(to_ts(since))
    return "".join(f" AND {c}" for c in clauses), params


def to_ts(moment: datetime) -> int:
    return int(moment.timestamp())


def from_ts(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _paper_values(paper: Paper) -> tuple[object, ...]:
    return (
        paper.arxiv_id,
        paper.version,
        paper.title,
        paper.abstract,
        ", ".join(a.name for a in paper.authors),
        json.dumps([[a.name, list(a.affiliations)] for a in paper.authors], ensure_ascii=False),
        paper.primary_category,
        " ".join(paper.categories),
        to_ts(paper.published),
        to_ts(paper.updated),
        paper.comment,
        paper.journal_ref,
        paper.doi,
        paper.authors_omitted,
        int(paper.provisional),
    )


def paper_from_row(row: aiosqlite.Row, announced: Announcement | None = None) -> Paper:
    return Paper(
        arxiv_id=row["arxiv_id"],
        version=row["version"],
        title=row["title"],
        abstract=row["abstract"],
        authors=tuple(Author(name, tuple(affs)) for name, affs in json.loads(row["authors_json"])),
        primary_category=row["primary_category"],
        categories=tuple(row["categories"].split()),
        published=from_ts(row["published"]),
        updated=from_ts(row["updated"]),
        comment=row["comment"],
        journal_ref=row["journal_ref"],
        doi=row["doi"],
        authors_omitted=row["authors_omitted"],
        provisional=bool(row["provisional"]),
        announced=announced,
    )


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


Stored = tuple[int, bool, int]  # what decides whether a copy is newer: (version, provisional, updated)


def _stored(paper: Paper) -> Stored:
    return paper.version, paper.provisional, to_ts(paper.updated)


def _is_newer(paper: Paper, stored: Stored) -> bool:
    """A higher version is newer. Of one version, a full copy beats a provisional one whatever their times (an
    RSS copy is dated by its announcement, after the version's own time), then the later copy wins."""
    version, provisional, updated = stored
    if paper.version != version:
        return paper.version > version
    if paper.provisional != provisional:
        return provisional
    return to_ts(paper.updated) > updated


class PaperRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def stored_versions(self, arxiv_ids: Sequence[str]) -> dict[str, Stored]:
        """arxiv_id -> (version, provisional, updated) for the ids already stored."""
        found: dict[str, Stored] = {}
        for chunk in _chunks(list(dict.fromkeys(arxiv_ids))):
            rows = await self.db.fetchall(
                "SELECT arxiv_id, version, provisional, updated FROM papers"
                f" WHERE arxiv_id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            found.update({r["arxiv_id"]: (r["version"], bool(r["provisional"]), r["updated"]) for r in rows})
        return found

    async def stored_ids(self, arxiv_ids: Sequence[str]) -> set[str]:
        return set(await self.stored_versions(arxiv_ids))

    async def provisional(self, *, since: datetime, limit: int) -> list[str]:
        """Ids of provisional papers written since `since`, those waiting longest first."""
        rows = await self.db.fetchall(
            "SELECT arxiv_id FROM papers WHERE provisional = 1 AND last_changed >= ?"
            " ORDER BY last_changed, pk LIMIT ?",
            (to_ts(since), limit),
        )
        return [r[0] for r in rows]

    async def upsert(self, papers: Iterable[Paper], *, seen_at: datetime) -> UpsertResult:
        """Store papers in one transaction: new ids are inserted, newer versions update the row (keeping
        first_seen), older or identical versions change nothing. The last copy of an id in a batch wins."""
        latest: dict[str, Paper] = {}
        for paper in papers:
            held = latest.get(paper.arxiv_id)
            if held is None or _is_newer(paper, _stored(held)):
                latest[paper.arxiv_id] = paper
        if not latest:
            return UpsertResult()
        now = to_ts(seen_at)
        async with self.db.transaction() as conn:
            stored = await self.stored_versions(list(latest))
            new = [p for aid, p in latest.items() if aid not in stored]
            changed = [p for aid, p in latest.items() if aid in stored and _is_newer(p, stored[aid])]
            await conn.executemany(_INSERT, [(*_paper_values(p), now, now) for p in new])
            if changed:
                await conn.executemany(_UPDATE, [(*_paper_values(p)[1:], now, p.arxiv_id) for p in changed])
                await conn.executemany(
                    "DELETE FROM paper_categories WHERE paper_pk = (SELECT pk FROM papers WHERE arxiv_id = ?)",
                    [(p.arxiv_id,) for p in changed],
                )
            await conn.executemany(
                _LINK_CATEGORIES, [(c, p.arxiv_id) for p in (*new, *changed) for c in p.categories]
            )
        return UpsertResult(
            new=[p.arxiv_id for p in new],
            updated=[p.arxiv_id for p in changed],
            unchanged=len(latest) - len(new) - len(changed),
        )

    async def get(self, arxiv_id: str) -> Paper | None:
        row = await self.db.fetchone(
            f"SELECT p.*, {HEADLINE} FROM papers p WHERE p.arxiv_id = ?", (arxiv_id,)
        )
        return paper_from_row(row, headline_from(row, arxiv_id)) if row else None

    async def get_many(self, arxiv_ids: Sequence[str]) -> list[Paper]:
        """Papers in the order asked, skipping ids not stored."""
        by_id: dict[str, Paper] = {}
        for chunk in _chunks(list(arxiv_ids)):
            rows = await self.db.fetchall(
                f"SELECT * FROM papers WHERE arxiv_id IN ({','.join('?' * len(chunk))})", chunk
            )
            by_id.update({r["arxiv_id"]: paper_from_row(r) for r in rows})
        return [by_id[a] for a in arxiv_ids if a in by_id]

    async def first_seen(self, arxiv_id: str) -> datetime | None:
        row = await self.db.fetchone("SELECT first_seen FROM papers WHERE arxiv_id = ?", (arxiv_id,))
        return from_ts(row[0]) if row else None

    async def count(self) -> int:
        """Papers stored: kept by triggers (migration 0017), counting every row grew with the history."""
        row = await self.db.fetchone("SELECT papers FROM paper_count WHERE id = 1")
        return int(row[0]) if row else 0

    async def latest(self, limit: int = 20, *, categories: Sequence[str] = ()) -> list[Paper]:
        """The newest papers by v1 submission time, optionally of some categories."""
        if categories:
            rows = await self.db.fetchall(
                "SELECT p.* FROM papers p WHERE p.pk IN (SELECT paper_pk FROM paper_categories "
                f"WHERE category IN ({','.join('?' * len(categories))})) ORDER BY p.published DESC LIMIT ?",
                (*categories, limit),
            )
        else:
            rows = await self.db.fetchall("SELECT * FROM papers ORDER BY published DESC LIMIT ?", (limit,))
        return [paper_from_row(r) for r in rows]

    async def count_in_categories(self, categories: Sequence[str], start: datetime, end: datetime) -> int:
        """Distinct papers of any of the categories submitted (v1) in [start, end). Whole-day windows (as
        momentum's are) add up per-day counts kept in category_day_counts; other windows count directly."""
        cats = sorted(set(categories))
        lo, hi = to_ts(start), to_ts(end)
        if lo % DAY or hi % DAY:
            return await self._count_distinct(cats, lo, hi)
        key, first, last = " ".join(cats), lo // DAY, hi // DAY
        rows = await self.db.fetchall(
            "SELECT day, papers FROM category_day_counts WHERE categories = ? AND day >= ? AND day < ?",
            (key, first, last),
        )
        known = {r[0]: r[1] for r in rows}
        missing = [d for d in range(first, last) if d not in known]
        if missing:
            # Counted and cached in one write transaction, so a paper stored meanwhile cannot be missed by both.
            async with self.db.transaction() as conn:
                counted = dict.fromkeys(missing, 0)
                placeholders = ",".join("?" * len(cats))
                for day, papers in await self.db.fetchall(
                    "SELECT published / 86400 AS day, COUNT(DISTINCT paper_pk) FROM paper_categories"
                    f" WHERE category IN ({placeholders}) AND published >= ? AND published < ? GROUP BY day",
                    (*cats, missing[0] * DAY, (missing[-1] + 1) * DAY),
                ):
                    if day in counted:
                        counted[day] = papers
                await conn.executemany(
                    "INSERT OR REPLACE INTO category_day_counts (categories, day, papers) VALUES (?, ?, ?)",
                    [(key, day, papers) for day, papers in counted.items()],
                )
            known.update(counted)
        return sum(known.values())

    async def _count_distinct(self, categories: Sequence[str], lo: int, hi: int) -> int:
        row = await self.db.fetchone(
            "SELECT COUNT(DISTINCT paper_pk) FROM paper_categories "
            f"WHERE category IN ({','.join('?' * len(categories))}) AND published >= ? AND published < ?",
            (*categories, lo, hi),
        )
        return int(row[0]) if row else 0

    async def category_names(self) -> list[str]:
        """Every category a stored paper has. A loose index scan (one index seek per category): a DISTINCT
        would read all of paper_categories, a second per million papers."""
        names: list[str] = []
        row = await self.db.fetchone("SELECT MIN(category) FROM paper_categories")
        while row is not None and row[0] is not None:
            names.append(row[0])
            row = await self.db.fetchone(
                "SELECT MIN(category) FROM paper_categories WHERE category > ?", (row[0],)
            )
        return names

    async def weekly_category_counts(self, since: datetime) -> list[tuple[str, str, int]]:
        """(week start as YYYY-MM-DD, Monday-based, UTC; category; papers) for papers submitted since `since`."""
        rows = await self.db.fetchall(
            "SELECT date(published, 'unixepoch', '-6 days', 'weekday 1') AS week, category, COUNT(*) AS n "
            "FROM paper_categories WHERE published >= ? GROUP BY week, category ORDER BY week, category",
            (to_ts(since),),
        )
        return [(r["week"], r["category"], r["n"]) for r in rows]

    async def texts(
        self, *, after: int = 0, batch: int = 5000
    ) -> AsyncIterator[list[tuple[int, str, str, str]]]:
        """(position, arxiv id, title, abstract) of the papers first stored after `after`, by position (pk)."""
        while True:
            rows = await self.db.fetchall(
                "SELECT pk, arxiv_id, title, abstract FROM papers WHERE pk > ? ORDER BY pk LIMIT ?",
                (after, batch),
            )
            if not rows:
                return
            after = rows[-1][0]
            yield [(r[0], r[1], r[2], r[3]) for r in rows]

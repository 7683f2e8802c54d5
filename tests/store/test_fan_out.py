"""The outbox's fan-out inside the database (DeliveryRepo.fan_out), on both back ends: the day's (topic, paper)
rows joined with the follows give one row per (channel, paper) naming every topic that wants it, in-server and
suggested-only reach, ratings that withhold or lift a paper, rows already there, lease rows for new channels;
and what the topic ids on the rows must keep doing (unfollow, a deleted topic, a deleted paper)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg

from bot.clock import FakeClock
from bot.models import MatchKind, Mode, Paper, Reach
from bot.store import SqliteStore, Store
from bot.store.database import bundled_migrations as sqlite_migrations
from bot.store.postgres import PostgresStore
from bot.store.postgres.database import bundled_migrations as postgres_migrations
from tests.factories import make_paper

G1, G2 = 1, 2  # servers


async def catalog_topic(store: Store, clock: FakeClock, name: str) -> int:
    row, _ = await store.topics.save(
        guild_id=0, slug=name.lower(), name=name, description="", query="ti:x", at=clock.now()
    )
    return row.id


async def follow(
    store: Store,
    clock: FakeClock,
    guild: int,
    channel: int,
    topic_id: int,
    mode: Mode = "each",
    match: MatchKind = "exact",
) -> None:
    await store.follows.upsert(
        guild_id=guild,
        channel_id=channel,
        topic_id=topic_id,
        mode=mode,
        digest_hour=8,
        created_by=None,
        at=clock.now(),
        match=match,
    )


async def stored(store: Store, clock: FakeClock, *numbers: int) -> list[Paper]:
    papers = [make_paper(n) for n in numbers]
    await store.papers.upsert(papers, seen_at=clock.now())
    return papers


async def queued(store: Store, channel: int) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The channel's pending rows: arxiv id -> (mode, the topics its card names)."""
    rows = {}
    for mode in ("each", "digest"):
        for d in await store.deliveries.for_channel(channel, mode=mode, now=None):  # type: ignore[arg-type]
            rows[d.paper.arxiv_id] = (d.mode, d.topics)
    return rows


async def test_a_row_per_channel_and_paper_naming_every_topic_that_wants_it(
    store: Store, clock: FakeClock
) -> None:
    rl, rm, cv = [await catalog_topic(store, clock, n) for n in ("RL", "RM", "CV")]
    await follow(store, clock, G1, 11, rl, mode="digest")
    await follow(store, clock, G1, 11, rm)  # 'each' wins over the digest in the same channel
    await follow(store, clock, G2, 21, rl, mode="digest")
    await follow(store, clock, G2, 22, cv)
    await store.follows.mark_broken(22, "403 Missing Access", clock.now())  # a broken follow gets nothing
    one, two = await stored(store, clock, 1, 2)
    reach = [
        Reach(rl, None, one.arxiv_id, "exact"),
        Reach(rm, None, one.arxiv_id, "exact"),
        Reach(cv, None, one.arxiv_id, "exact"),
        Reach(rl, None, two.arxiv_id, "exact"),
        Reach(rl, None, "2611.99999", "exact"),  # not stored: skipped
    ]

    written = await store.deliveries.fan_out(reach, clock.now())

    assert written == 4  # (11, one), (11, two), (21, one), (21, two)
    assert await queued(store, 11) == {
        one.arxiv_id: ("each", ("RL", "RM")),
        two.arxiv_id: ("digest", ("RL",)),
    }
    assert await queued(store, 21) == {one.arxiv_id: ("digest", ("RL",)), two.arxiv_id: ("digest", ("RL",))}
    assert await queued(store, 22) == {}
    assert await store.deliveries.counts(G1) == {"pending": 2}
    # each new channel has its lease row: a worker claims the channel with due 'each' rows
    now = clock.now()
    assert await store.deliveries.claim_channels("w", "each", now, now + timedelta(minutes=1)) == [11]


async def test_in_server_and_suggested_reach_only_the_follows_they_name(
    store: Store, clock: FakeClock
) -> None:
    rl = await catalog_topic(store, clock, "RL")
    await follow(store, clock, G1, 11, rl)
    await follow(store, clock, G1, 12, rl, match="suggested")
    await follow(store, clock, G2, 21, rl)
    await follow(store, clock, G2, 22, rl, match="suggested")
    in_g1, suggested, lifted = await stored(store, clock, 1, 2, 3)

    await store.deliveries.fan_out(
        [
            Reach(rl, G1, in_g1.arxiv_id, "exact"),  # a server's own topic under RL matched it: G1 only
            Reach(rl, None, suggested.arxiv_id, "suggested"),  # the scorer's: follows asking for suggestions
            Reach(rl, G2, lifted.arxiv_id, "suggested"),  # lifted by G2's ratings: G2's suggestion follows
        ],
        clock.now(),
    )

    assert set(await queued(store, 11)) == {in_g1.arxiv_id}
    assert set(await queued(store, 12)) == {in_g1.arxiv_id, suggested.arxiv_id}
    assert set(await queued(store, 21)) == set()
    assert set(await queued(store, 22)) == {suggested.arxiv_id, lifted.arxiv_id}


async def test_a_withheld_paper_skips_that_servers_follows_of_the_topic_only(
    store: Store, clock: FakeClock
) -> None:
    rl, rm = await catalog_topic(store, clock, "RL"), await catalog_topic(store, clock, "RM")
    await follow(store, clock, G1, 11, rl)
    await follow(store, clock, G1, 12, rl)
    await follow(store, clock, G1, 12, rm)
    await follow(store, clock, G2, 21, rl)
    [paper] = await stored(store, clock, 1)

    await store.deliveries.fan_out(
        [
            Reach(rl, None, paper.arxiv_id, "exact"),
            Reach(rm, None, paper.arxiv_id, "exact"),
            Reach(rl, G1, paper.arxiv_id, "withheld"),  # G1's ratings of RL keep it out of G1's RL follows
        ],
        clock.now(),
    )

    assert await queued(store, 11) == {}
    assert await queued(store, 12) == {paper.arxiv_id: ("each", ("RM",))}  # still wanted there through RM
    assert await queued(store, 21) == {paper.arxiv_id: ("each", ("RL",))}
    assert await store.deliveries.fan_out([Reach(rl, G1, paper.arxiv_id, "withheld")], clock.now()) == 0


async def test_rows_already_there_gain_topics_and_upgrades_but_sent_ones_are_never_queued_again(
    store: Store, clock: FakeClock
) -> None:
    rl, rm = await catalog_topic(store, clock, "RL"), await catalog_topic(store, clock, "RM")
    await follow(store, clock, G1, 11, rl, mode="digest")
    await follow(store, clock, G1, 12, rl)
    one, two = await stored(store, clock, 1, 2)
    await store.deliveries.fan_out(
        [Reach(rl, None, one.arxiv_id, "exact"), Reach(rl, None, two.arxiv_id, "exact")], clock.now()
    )
    [sent] = [d for d in await store.deliveries.for_channel(12, mode="each", now=None) if d.paper == two]
    await store.deliveries.mark_sent([sent.id], 555, clock.now())
    await follow(store, clock, G1, 11, rm)
    await follow(store, clock, G1, 12, rm)

    await store.deliveries.fan_out(
        [Reach(rm, None, one.arxiv_id, "exact"), Reach(rm, None, two.arxiv_id, "exact")], clock.now()
    )

    assert await queued(store, 11) == {
        one.arxiv_id: ("each", ("RL", "RM")),  # upgraded to 'each', RM named
        two.arxiv_id: ("each", ("RL", "RM")),
    }
    assert await queued(store, 12) == {one.arxiv_id: ("each", ("RL", "RM"))}  # two was sent: not again
    assert await store.deliveries.counts(G1) == {"pending": 3, "sent": 1}


async def test_unfollow_takes_the_topic_off_pending_rows_and_drops_rows_left_without_one(
    store: Store, clock: FakeClock
) -> None:
    rl, rm = await catalog_topic(store, clock, "RL"), await catalog_topic(store, clock, "RM")
    await follow(store, clock, G1, 11, rl)
    await follow(store, clock, G1, 11, rm)
    one, two = await stored(store, clock, 1, 2)
    await store.deliveries.fan_out(
        [
            Reach(rl, None, one.arxiv_id, "exact"),
            Reach(rm, None, one.arxiv_id, "exact"),
            Reach(rl, None, two.arxiv_id, "exact"),
        ],
        clock.now(),
    )

    assert await store.follows.remove(G1, rl) == 1

    assert await queued(store, 11) == {one.arxiv_id: ("each", ("RM",))}


async def test_a_deleted_topic_leaves_the_rows_of_its_server(store: Store, clock: FakeClock) -> None:
    """A server's own topic deleted after its posts went out is no longer among their topics: a topic created
    next (SQLite may give it the same id) does not inherit the old cards' ratings."""
    own = await store.topics.create(guild_id=G1, name="Mine", description="", query="ti:x", at=clock.now())
    await follow(store, clock, G1, 11, own.id)
    [paper] = await stored(store, clock, 1)
    await store.deliveries.fan_out([Reach(own.id, G1, paper.arxiv_id, "exact")], clock.now())
    [row] = await store.deliveries.for_channel(11, mode="each", now=None)
    await store.deliveries.mark_sent([row.id], 1, clock.now())
    await store.follows.remove(G1, own.id)
    await store.topics.delete(own.id)

    later = await store.topics.create(guild_id=G1, name="Later", description="", query="ti:y", at=clock.now())
    await follow(store, clock, G1, 11, later.id)

    assert await store.ratings.followed_holding(G1, paper.arxiv_id, [11]) == []


async def test_a_paper_deleted_by_hand_takes_its_rows_with_it(store: Store, clock: FakeClock) -> None:
    rl = await catalog_topic(store, clock, "RL")
    await follow(store, clock, G1, 11, rl)
    one, two = await stored(store, clock, 1, 2)
    await store.deliveries.fan_out(
        [Reach(rl, None, one.arxiv_id, "exact"), Reach(rl, None, two.arxiv_id, "exact")], clock.now()
    )
    db: Any = store.db  # type: ignore[attr-defined]  # an operator's SQL: no store method deletes papers

    await db.execute("DELETE FROM papers WHERE arxiv_id = ?", (one.arxiv_id,))

    assert set(await queued(store, 11)) == {two.arxiv_id}


# ---- the outbox of a deployment from before the topic ids moved onto its rows --------------------------------

# A pending row standing for two topics and a sent one, as the link table held them.
_OLD_OUTBOX = [
    "INSERT INTO topics (id, guild_id, slug, name, query, created_at, updated_at) VALUES"
    " (1, 0, 'rl', 'RL', 'ti:x', 0, 0), (2, 0, 'rm', 'RM', 'ti:x', 0, 0)",
    "INSERT INTO deliveries (id, guild_id, channel_id, paper_pk, mode, status, next_attempt_at, created_at) VALUES"
    " (1, 1, 11, {one}, 'each', 'pending', 0, 0), (2, 1, 11, {two}, 'each', 'sent', 0, 0)",
    "INSERT INTO delivery_topics (delivery_id, topic_id) VALUES (1, 1), (1, 2), (2, 2)",
    "INSERT INTO delivery_leases (channel_id) VALUES (11)",
]


async def _check_carried_over(store: Store, clock: FakeClock, one: Paper, two: Paper) -> None:
    """The migrated outbox answers as the old one: the pending row names both topics and is claimed and
    posted; the sent row keeps its topic (ratings read it) and is never queued again."""
    assert await queued(store, 11) == {one.arxiv_id: ("each", ("RL", "RM"))}
    now = clock.now()
    assert await store.deliveries.claim_channels("w", "each", now, now + timedelta(minutes=1)) == [11]
    await store.follows.upsert(
        guild_id=1, channel_id=11, topic_id=2, mode="each", digest_hour=8, created_by=None, at=now
    )
    assert [t.name for t in await store.ratings.followed_holding(1, two.arxiv_id, [11])] == ["RM"]
    await store.deliveries.fan_out([Reach(2, None, two.arxiv_id, "exact")], now)
    assert set(await queued(store, 11)) == {one.arxiv_id}


_PAPERS = (
    "INSERT INTO papers (arxiv_id, version, title, abstract, authors, authors_json, primary_category, categories,"
    " published, updated, first_seen, last_changed{words}) VALUES (?, 1, ?, '', '', '[]', 'cs.LG', 'cs.LG', 0, 0, 0,"
    " 0{blank})"
)
_MIGRATIONS = (
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT)"
)


async def test_sqlite_outbox_rows_keep_their_topics_through_the_migration(
    tmp_path: Path, clock: FakeClock
) -> None:
    papers = [make_paper(1), make_paper(2)]
    path = tmp_path / "before.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(_MIGRATIONS)
    for version, name, sql in sqlite_migrations():
        if version < 16:
            conn.executescript(sql)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    conn.executemany(_PAPERS.format(words="", blank=""), [(p.arxiv_id, p.title) for p in papers])
    pks = dict(conn.execute("SELECT arxiv_id, pk FROM papers").fetchall())
    for sql in _OLD_OUTBOX:
        conn.execute(sql.format(one=pks[papers[0].arxiv_id], two=pks[papers[1].arxiv_id]))
    conn.commit()
    conn.close()

    async with await SqliteStore.open(path, clock) as store:
        await _check_carried_over(store, clock, *papers)


async def test_postgres_outbox_rows_keep_their_topics_through_the_migration(
    postgres_url: str, clock: FakeClock
) -> None:
    papers = [make_paper(1), make_paper(2)]
    conn = await asyncpg.connect(postgres_url)
    try:
        await conn.execute(_MIGRATIONS)
        for version, name, sql in postgres_migrations():
            if version < 7:
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_migrations VALUES ($1, $2, 0)", version, name)
        words = _PAPERS.format(words=", title_words, abstract_words, authors_words", blank=", '', '', ''")
        for paper in papers:
            await conn.execute(words.replace("?", "$1", 1).replace("?", "$2", 1), paper.arxiv_id, paper.title)
        pks = {r[0]: r[1] for r in await conn.fetch("SELECT arxiv_id, pk FROM papers")}
        for sql in _OLD_OUTBOX:
            await conn.execute(sql.format(one=pks[papers[0].arxiv_id], two=pks[papers[1].arxiv_id]))
    finally:
        await conn.close()

    async with await PostgresStore.open(postgres_url, clock) as store:
        await _check_carried_over(store, clock, *papers)

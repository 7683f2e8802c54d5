"""Ratings and reading lists on a real SQLite file: one row per (server, topic, paper, member), changeable,
resettable, saved papers newest first, and both still there after the process is killed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import SqliteStore
from tests.factories import make_paper

GUILD, OTHER = 10, 20
ALICE, BOB = 100, 200


async def _topic(store: SqliteStore, slug: str = "rl", guild: int = 0) -> int:
    row, _ = await store.topics.save(
        guild_id=guild,
        slug=slug,
        name=slug.upper(),
        description="",
        query="ti:learning",
        at=store.clock.now(),
    )
    return row.id


async def _rows(store: SqliteStore, table: str) -> int:
    row = await store.db.fetchone(f"SELECT COUNT(*) FROM {table}")
    assert row is not None
    return int(row[0])


async def test_a_vote_is_one_row_per_member_and_a_changed_mind_replaces_it(store: SqliteStore) -> None:
    paper = make_paper(1)
    await store.papers.upsert([paper], seen_at=store.clock.now())
    topic = await _topic(store)
    rate = store.ratings.rate
    assert (
        await rate(
            guild_id=GUILD,
            topic_id=topic,
            arxiv_id=paper.arxiv_id,
            member_id=ALICE,
            vote=1,
            at=store.clock.now(),
        )
        is None
    )
    for _ in range(20):  # a burst of the same click
        assert (
            await rate(
                guild_id=GUILD,
                topic_id=topic,
                arxiv_id=paper.arxiv_id,
                member_id=ALICE,
                vote=1,
                at=store.clock.now(),
            )
            == 1
        )
    assert (
        await rate(
            guild_id=GUILD,
            topic_id=topic,
            arxiv_id=paper.arxiv_id,
            member_id=ALICE,
            vote=-1,
            at=store.clock.now(),
        )
        == 1
    )
    await rate(
        guild_id=GUILD, topic_id=topic, arxiv_id=paper.arxiv_id, member_id=BOB, vote=-1, at=store.clock.now()
    )
    await rate(
        guild_id=OTHER, topic_id=topic, arxiv_id=paper.arxiv_id, member_id=BOB, vote=1, at=store.clock.now()
    )

    assert await _rows(store, "ratings") == 3
    [rated] = await store.ratings.rated(GUILD, topic)
    assert (rated.arxiv_id, rated.up, rated.down, rated.net) == (paper.arxiv_id, 0, 2, -2)
    [theirs] = await store.ratings.rated(OTHER, topic)
    assert (theirs.up, theirs.down) == (1, 0)
    assert await store.ratings.counts(GUILD, [topic, topic + 99]) == {topic: 2, topic + 99: 0}
    assert await store.ratings.rated_topics() == [(GUILD, topic), (OTHER, topic)]


async def test_reset_forgets_one_servers_ratings_of_one_topic(store: SqliteStore) -> None:
    await store.papers.upsert([make_paper(1), make_paper(2)], seen_at=store.clock.now())
    rl, other_topic = await _topic(store, "rl"), await _topic(store, "cv")
    for topic, guild in ((rl, GUILD), (other_topic, GUILD), (rl, OTHER)):
        for n in (1, 2):
            await store.ratings.rate(
                guild_id=guild,
                topic_id=topic,
                arxiv_id=make_paper(n).arxiv_id,
                member_id=ALICE,
                vote=1,
                at=store.clock.now(),
            )
    assert await store.ratings.reset(GUILD, rl) == 2
    assert await store.ratings.reset(GUILD, rl) == 0
    assert await store.ratings.counts(GUILD, [rl, other_topic]) == {rl: 0, other_topic: 2}
    assert await store.ratings.counts(OTHER, [rl]) == {rl: 2}


async def test_rating_a_paper_or_topic_that_is_gone_is_a_lookup_error(store: SqliteStore) -> None:
    await store.papers.upsert([make_paper(1)], seen_at=store.clock.now())
    topic = await _topic(store)
    with pytest.raises(LookupError):
        await store.ratings.rate(
            guild_id=GUILD,
            topic_id=topic,
            arxiv_id="2611.99999",
            member_id=ALICE,
            vote=1,
            at=store.clock.now(),
        )
    await store.topics.delete(topic)
    with pytest.raises(LookupError):
        await store.ratings.rate(
            guild_id=GUILD,
            topic_id=topic,
            arxiv_id=make_paper(1).arxiv_id,
            member_id=ALICE,
            vote=1,
            at=store.clock.now(),
        )
    assert await _rows(store, "ratings") == 0


async def test_deleting_a_topic_deletes_its_ratings(store: SqliteStore) -> None:
    await store.papers.upsert([make_paper(1)], seen_at=store.clock.now())
    topic = await _topic(store, "mine", guild=GUILD)
    await store.ratings.rate(
        guild_id=GUILD,
        topic_id=topic,
        arxiv_id=make_paper(1).arxiv_id,
        member_id=ALICE,
        vote=-1,
        at=store.clock.now(),
    )
    await store.topics.delete(topic)
    assert await _rows(store, "ratings") == 0


async def test_a_card_rates_the_topics_its_channel_follows_that_hold_the_paper(store: SqliteStore) -> None:
    paper = make_paper(1)
    await store.papers.upsert([paper, make_paper(2)], seen_at=store.clock.now())
    rl, cv, unheld = await _topic(store, "rl"), await _topic(store, "cv"), await _topic(store, "nlp")
    await store.topics.add_matches([(rl, paper.arxiv_id)], store.clock.now())
    await store.topics.add_suggestions([(cv, paper.arxiv_id)], store.clock.now())
    for channel, topic in ((1, rl), (2, cv), (1, unheld)):
        await store.follows.upsert(
            guild_id=GUILD,
            channel_id=channel,
            topic_id=topic,
            mode="each",
            digest_hour=8,
            created_by=None,
            at=store.clock.now(),
        )

    holding = store.ratings.followed_holding
    assert [t.id for t in await holding(GUILD, paper.arxiv_id, [1])] == [rl]
    assert [t.id for t in await holding(GUILD, paper.arxiv_id, [2])] == [cv]
    assert [t.id for t in await holding(GUILD, paper.arxiv_id, [3])] == [rl, cv]  # /paper elsewhere
    assert await holding(OTHER, paper.arxiv_id, [1]) == []  # another server follows nothing
    assert await holding(GUILD, make_paper(2).arxiv_id, [1]) == []


async def test_a_reading_list_is_newest_first_once_per_paper(store: SqliteStore, clock: FakeClock) -> None:
    papers = [make_paper(n) for n in range(1, 5)]
    await store.papers.upsert(papers, seen_at=clock.now())
    for paper in papers:
        assert await store.saved.save(ALICE, paper.arxiv_id, clock.now())
        clock.advance(1 if paper is papers[0] else 0)  # same-second saves too
    assert not await store.saved.save(ALICE, papers[0].arxiv_id, clock.now())
    await store.saved.save(BOB, papers[0].arxiv_id, clock.now())

    listed = await store.saved.newest(ALICE, limit=10)
    assert [s.paper.arxiv_id for s in listed] == [p.arxiv_id for p in reversed(papers)]
    assert [s.paper.arxiv_id for s in await store.saved.newest(ALICE, limit=2, offset=1)] == [
        papers[2].arxiv_id,
        papers[1].arxiv_id,
    ]
    assert await store.saved.count(ALICE) == 4
    assert await store.saved.remove(ALICE, papers[1].arxiv_id)
    assert not await store.saved.remove(ALICE, papers[1].arxiv_id)
    assert await store.saved.count(ALICE) == 3 and await store.saved.count(BOB) == 1
    with pytest.raises(LookupError):
        await store.saved.save(ALICE, "2611.99999", clock.now())
    with pytest.raises(ValueError):
        await store.saved.newest(ALICE, limit=-1)


def test_ratings_and_saves_survive_a_kill_9(tmp_path: Path) -> None:
    """A process rates and saves, then is killed before it closes anything: both are there afterwards."""
    path = tmp_path / "paperwatch.sqlite3"
    script = textwrap.dedent(
        f"""
        import asyncio, os, signal
        from bot.store import SqliteStore
        from tests.factories import make_paper

        async def main():
            store = await SqliteStore.open({str(path)!r})
            now = store.clock.now()
            await store.papers.upsert([make_paper(1)], seen_at=now)
            topic, _ = await store.topics.save(guild_id=0, slug="rl", name="RL", description="", query="ti:x", at=now)
            await store.ratings.rate(guild_id=1, topic_id=topic.id, arxiv_id=make_paper(1).arxiv_id, member_id=2, vote=-1, at=now)
            await store.saved.save(2, make_paper(1).arxiv_id, now)
            os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[2], check=False)
    assert done.returncode == -9

    import asyncio

    async def read() -> tuple[int, int]:
        async with await SqliteStore.open(path) as store:
            return await store.ratings.counts(1, [1]) == {1: 1}, await store.saved.count(2)

    assert asyncio.run(read()) == (True, 1)

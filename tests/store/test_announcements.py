"""Provisional papers (an announcement feed's copies) and announcements in the store, on a real SQLite file: a full
copy completes a provisional one and moves its date, with its topic matches and day counts; announcements keep
the newest version and its first sighting."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

from bot.clock import FakeClock
from bot.models import Announcement, Author, Paper
from bot.store import SqliteStore
from tests.factories import make_paper

SUBMITTED = datetime(2026, 11, 19, 15, 0, tzinfo=UTC)  # v1 submission, a Thursday
ANNOUNCED = datetime(2026, 11, 23, 5, 0, tzinfo=UTC)  # the following Monday's announcement
DAY = timedelta(days=1)


def full(n: int = 1, **fields: object) -> Paper:
    """A paper as the API gives it."""
    return make_paper(n, published=SUBMITTED, **fields)


def provisional(paper: Paper) -> Paper:
    """The same version as the RSS feed gives it: dated by its announcement, no affiliations, no comment."""
    return replace(
        paper,
        published=ANNOUNCED,
        updated=ANNOUNCED,
        authors=tuple(Author(a.name) for a in paper.authors),
        comment=None,
        provisional=True,
    )


async def test_a_provisional_copy_never_replaces_a_full_one_of_its_version(
    store: SqliteStore, clock: FakeClock
) -> None:
    api = full(comment="12 pages")
    await store.papers.upsert([api], seen_at=clock.now())
    result = await store.papers.upsert([provisional(api)], seen_at=clock.now())
    assert (result.new, result.updated, result.unchanged) == ([], [], 1)
    assert await store.papers.get(api.arxiv_id) == api  # affiliations, comment, v1 date kept
    newer = provisional(replace(api, version=2))  # a replacement announced: a new version, still provisional
    assert (await store.papers.upsert([newer], seen_at=clock.now())).updated == [api.arxiv_id]
    stored = await store.papers.get(api.arxiv_id)
    assert stored is not None and stored.version == 2 and stored.provisional
    assert stored.published == SUBMITTED  # the earliest date stays


async def test_the_full_copy_completes_a_provisional_one_and_moves_its_date_matches_and_counts(
    store: SqliteStore, clock: FakeClock
) -> None:
    api = full()
    topic, _ = await store.topics.save(
        guild_id=0, slug="rl", name="RL", description="", query="ti:reinforcement", at=clock.now()
    )
    await store.papers.upsert([provisional(api)], seen_at=clock.now())
    await store.topics.add_matches([(topic.id, api.arxiv_id)], clock.now())
    announced_day = (ANNOUNCED.replace(hour=0), ANNOUNCED.replace(hour=0) + DAY)
    submitted_day = (SUBMITTED.replace(hour=0), SUBMITTED.replace(hour=0) + DAY)
    # whole-day windows are cached per day: both days are counted (and cached) before the correction
    assert await store.papers.count_in_categories(["cs.LG"], *announced_day) == 1
    assert await store.papers.count_in_categories(["cs.LG"], *submitted_day) == 0
    assert await store.topics.count_matches(topic.id, *announced_day) == 1

    # The API's copy of the same version is dated earlier in every way, and still completes it.
    result = await store.papers.upsert([api], seen_at=clock.now())
    assert result.updated == [api.arxiv_id]
    assert await store.papers.get(api.arxiv_id) == api
    assert await store.papers.count_in_categories(["cs.LG"], *announced_day) == 0
    assert await store.papers.count_in_categories(["cs.LG"], *submitted_day) == 1
    assert await store.topics.count_matches(topic.id, *announced_day) == 0
    assert await store.topics.count_matches(topic.id, *submitted_day) == 1
    # recording the match again (the intake matches updated papers) keeps it one match
    await store.topics.add_matches([(topic.id, api.arxiv_id)], clock.now())
    week = (SUBMITTED - 7 * DAY, ANNOUNCED + 7 * DAY)
    assert await store.topics.counts_between([topic.id], week) == {topic.id: [1]}
    assert [p.arxiv_id for p in await store.topics.latest_papers(topic.id, 10)] == [api.arxiv_id]


async def test_provisional_papers_are_listed_longest_waiting_first_within_the_time_asked(
    store: SqliteStore, clock: FakeClock
) -> None:
    first, second, done = (provisional(full(n)) for n in (1, 2, 3))
    await store.papers.upsert([first], seen_at=clock.now())
    clock.advance(3600)
    await store.papers.upsert([second, done], seen_at=clock.now())
    await store.papers.upsert([full(3)], seen_at=clock.now())
    await store.papers.upsert([full(4)], seen_at=clock.now())
    since = clock.now() - timedelta(hours=2)
    assert await store.papers.provisional(since=since, limit=10) == [first.arxiv_id, second.arxiv_id]
    assert await store.papers.provisional(since=since, limit=1) == [first.arxiv_id]
    assert await store.papers.provisional(since=clock.now() - timedelta(minutes=5), limit=10) == [
        second.arxiv_id
    ]
    assert await store.papers.stored_ids([first.arxiv_id, "2611.99999"]) == {first.arxiv_id}


async def test_announcements_keep_the_newest_version_and_its_first_sighting(
    store: SqliteStore, clock: FakeClock
) -> None:
    paper = full()
    await store.papers.upsert([paper], seen_at=clock.now())
    monday, tuesday = date(2026, 11, 23), date(2026, 11, 24)
    new = Announcement(paper.arxiv_id, 1, "cs.LG", "new", monday)
    cross = Announcement(paper.arxiv_id, 1, "cs.AI", "cross", monday)
    unknown = Announcement("2611.99999", 1, "cs.LG", "new", monday)  # a paper the store lacks: dropped
    assert await store.announcements.record([new, cross, unknown], clock.now()) == 2
    # the same batch served again a day later (a stale feed): nothing moves
    assert await store.announcements.record([replace(new, day=tuesday)], clock.now()) == 0
    assert await store.announcements.of_paper(paper.arxiv_id) == [cross, new]
    stored = await store.papers.get(paper.arxiv_id)
    assert stored is not None and stored.announced == new  # a card shows "new" before "cross"

    replaced = Announcement(paper.arxiv_id, 2, "cs.LG", "replace", tuesday)
    assert await store.announcements.record([replaced], clock.now()) == 1
    assert await store.announcements.record([new], clock.now()) == 0  # never back to an older version
    assert await store.announcements.of_paper(paper.arxiv_id) == [cross, replaced]
    stored = await store.papers.get(paper.arxiv_id)
    # the stored copy is still v1: only an announcement of v1 describes it (cs.LG's moved on to v2)
    assert stored is not None and stored.announced == cross
    await store.papers.upsert([replace(paper, version=2)], seen_at=clock.now())
    stored = await store.papers.get(paper.arxiv_id)
    assert stored is not None and stored.announced == replaced

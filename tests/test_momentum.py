"""bot.momentum: the sentence, the windows (counted by the service as /momentum does), the ranking, sparklines."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from bot.clock import FakeClock
from bot.models import TopicRow
from bot.momentum import Momentum, WeekCount, rank_by_growth, sparkline, window_bounds
from bot.services.momentum import MomentumService
from bot.store import Store
from bot.topics.index import TopicIndex
from tests.factories import make_paper

WATCHED = ("cs.AI", "cs.CL", "cs.LG")
# Sunday 2026-11-29 15:00 UTC: the last complete day is Saturday the 28th.
NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)


def momentum(current: int, previous: int, all_new: int = 10_000, **extra: object) -> Momentum:
    values: dict[str, object] = {
        "topic": "RL Post-Training",
        "weeks": 4,
        "window_start": NOW,
        "window_end": NOW,
        "current": current,
        "previous": previous,
        "all_new": all_new,
        "categories": WATCHED,
        "name_categories": False,
        "series": (),
    }
    values.update(extra)
    return Momentum(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("current", "previous", "all_new", "sentence"),
    [
        (
            49,
            16,
            9800,
            "49 papers in the last four weeks, up 206% on the four weeks before. 0.5% of all new papers.",
        ),
        (
            88,
            100,
            4000,
            "88 papers in the last four weeks, down 12% on the four weeks before. 2.2% of all new papers.",
        ),
        (
            102,
            100,
            1000,
            "102 papers in the last four weeks, about the same as the four weeks before. 10% of all new papers.",
        ),
        (3, 0, 9000, "3 papers in the last four weeks, new this period. <0.1% of all new papers."),
        (1, 0, 50, "1 paper in the last four weeks, new this period. 2.0% of all new papers."),
        (
            4,
            2,
            100,
            "4 papers in the last four weeks, against 2 in the four weeks before: too few to call a trend. 4.0% of all new papers.",
        ),
        (0, 0, 0, "No papers in the last four weeks, and none in the four weeks before."),
        (
            0,
            12,
            500,
            "0 papers in the last four weeks, down 100% on the four weeks before. 0% of all new papers.",
        ),
    ],
)
def test_sentence(current: int, previous: int, all_new: int, sentence: str) -> None:
    assert momentum(current, previous, all_new).sentence() == sentence


def test_sentence_names_the_denominator_when_the_topic_narrows_it() -> None:
    m = momentum(49, 16, 9800, categories=("cs.RO",), name_categories=True, weeks=1)
    assert (
        m.sentence()
        == "49 papers in the last week, up 206% on the week before. 0.5% of all new papers in cs.RO."
    )


def test_window_ends_at_last_complete_day() -> None:
    prev_start, start, end = window_bounds(NOW, 4)
    assert end == datetime(2026, 11, 29, tzinfo=UTC)
    assert start == end - timedelta(days=28) and prev_start == start - timedelta(days=28)
    # just after midnight the day that just ended counts
    assert window_bounds(datetime(2026, 11, 30, 0, 0, 1, tzinfo=UTC), 4)[2] == datetime(
        2026, 11, 30, tzinfo=UTC
    )


async def _topic_with(
    store: Store, clock: FakeClock, times: list[datetime], others: list[datetime]
) -> TopicRow:
    topic, _ = await store.topics.save(
        guild_id=0,
        slug="rl-post-training",
        name="RL Post-Training",
        description="",
        query="ti:rl",
        at=clock.now(),
    )
    papers = [make_paper(i, published=t) for i, t in enumerate(times)]
    fill = [make_paper(1000 + i, published=t, categories=("cs.CL",)) for i, t in enumerate(others)]
    await store.papers.upsert(papers + fill, seen_at=clock.now())
    await store.topics.add_matches([(topic.id, p.arxiv_id) for p in papers], clock.now())
    return topic


async def momentum_now(store: Store, topic: TopicRow) -> Momentum:
    """The topic's momentum at NOW, as /momentum computes it."""
    clock = FakeClock(NOW)
    index = TopicIndex(store, clock)
    await index.start([])
    return await MomentumService(store, index, clock, WATCHED).topic(topic)


async def test_counts_respect_window_edges(store: Store, clock: FakeClock) -> None:
    _, start, end = window_bounds(NOW, 4)
    second = timedelta(seconds=1)
    times = [
        start,  # first second of the window: in
        end - second,  # last second of the last complete day: in
        end,  # today: not yet counted
        start - second,  # last second of the window before
    ]
    topic = await _topic_with(store, clock, times, others=[start + timedelta(days=3)] * 2)
    m = await momentum_now(store, topic)
    assert (m.current, m.previous) == (2, 1)
    assert m.all_new == 4  # the two matched in-window papers and the two others, all of watched categories
    assert m.share_pct == 50


async def test_weekly_series_and_partial_week(store: Store, clock: FakeClock) -> None:
    # NOW is a Sunday: its week began Monday 2026-11-23 and is still partial.
    times = [datetime(2026, 11, 23, 1, tzinfo=UTC), datetime(2026, 11, 29, 14, tzinfo=UTC)]
    times += [datetime(2026, 11, 22, 23, 59, tzinfo=UTC)]  # Sunday of the week before
    times += [datetime(2026, 9, 7, tzinfo=UTC)]  # the first of the 12 weeks
    times += [datetime(2026, 9, 6, 23, tzinfo=UTC)]  # before the series
    topic = await _topic_with(store, clock, times, others=[])
    m = await momentum_now(store, topic)
    assert len(m.series) == 12
    assert m.series[-1] == WeekCount(date(2026, 11, 23), 2, partial=True)
    assert m.series[-2] == WeekCount(date(2026, 11, 16), 1, partial=False)
    assert m.series[0] == WeekCount(date(2026, 9, 7), 1, partial=False)
    assert m.series[0].label == "Week of Sep 7"
    assert sum(w.count for w in m.series) == 4


async def test_other_time_zones_are_counted_in_utc(store: Store, clock: FakeClock) -> None:
    from zoneinfo import ZoneInfo

    _, start, _ = window_bounds(NOW, 4)
    # 2026-11-01 00:30 in UTC+14 is still 10:30 on Oct 31 in UTC: before this window's start on Nov 1 UTC.
    before = datetime(2026, 11, 1, 0, 30, tzinfo=ZoneInfo("Pacific/Kiritimati"))
    assert before.astimezone(UTC) < start
    topic = await _topic_with(store, clock, [before], others=[])
    m = await momentum_now(store, topic)
    assert (m.current, m.previous) == (0, 1)


def test_rank_by_growth_puts_small_counts_last() -> None:
    ranked = rank_by_growth(
        [
            momentum(3, 0, topic="Tiny"),
            momentum(150, 100, topic="Growing"),
            momentum(90, 100, topic="Shrinking"),
            momentum(400, 200, topic="Doubling"),
        ]
    )
    assert [m.topic for m in ranked] == ["Doubling", "Growing", "Shrinking", "Tiny"]


def test_sparkline() -> None:
    assert sparkline([0, 1, 2, 4, 8]) == "▁▂▃▅█"
    assert sparkline([0, 0]) == "▁▁"

"""The outbox state machine: each paper once per channel, caps and summaries, retries, broken channels,
crashes at each step, digests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.delivery import (
    ChannelGone,
    DeliveryWorker,
    PostRejected,
    RetryLater,
    enqueue_for_new_papers,
    more_papers_text,
    nonce_for,
)
from bot.models import Paper
from bot.store import Store
from tests.factories import make_paper
from tests.fakes.poster import Crash, Post, RecordingPoster

pytestmark = pytest.mark.both_back_ends  # the worker on the Store protocol: each back end in turn

GUILD, CHANNEL, OTHER_CHANNEL = 1, 100, 200


async def topic(store: Store, clock: FakeClock, name: str) -> int:
    row, _ = await store.topics.save(
        guild_id=0,
        slug=name.lower().replace(" ", "-"),
        name=name,
        description="",
        query="ti:x",
        at=clock.now(),
    )
    return row.id


async def follow(
    store: Store, clock: FakeClock, topic_id: int, channel: int = CHANNEL, mode: str = "each", hour: int = 8
) -> None:
    await store.follows.upsert(
        guild_id=GUILD,
        channel_id=channel,
        topic_id=topic_id,
        mode=mode,  # type: ignore[arg-type]
        digest_hour=hour,
        created_by=None,
        at=clock.now(),
    )


async def arrive(store: Store, clock: FakeClock, papers: list[Paper], matches: dict[str, set[int]]) -> None:
    """What ingest does for one page: store the papers and enqueue, in one transaction."""
    async with store.transaction():
        result = await store.papers.upsert(papers, seen_at=clock.now())
        await enqueue_for_new_papers(store, clock, result, matches)


def worker(store: Store, poster: RecordingPoster, clock: FakeClock, **options: int) -> DeliveryWorker:
    return DeliveryWorker(store, poster, clock, **options)


async def test_paper_matching_two_followed_topics_is_posted_once_naming_both(
    store: Store, clock: FakeClock
) -> None:
    rl, rm = await topic(store, clock, "RL Post-Training"), await topic(store, clock, "Reward Modeling")
    await follow(store, clock, rl)
    await follow(store, clock, rm)
    paper = make_paper(1)
    await arrive(store, clock, [paper], {paper.arxiv_id: {rl, rm}})
    poster = RecordingPoster()
    report = await worker(store, poster, clock).deliver_once()
    assert report.sent == 1
    assert poster.posts == [
        Post(
            CHANNEL,
            "card",
            [paper.arxiv_id],
            [("RL Post-Training", "Reward Modeling")],
            nonce_for(CHANNEL, paper.arxiv_id),
        )
    ]
    assert (await worker(store, poster, clock).deliver_once()).sent == 0
    assert len(poster.posts) == 1


async def test_new_versions_and_known_papers_are_not_posted_again(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl)
    paper = make_paper(1)
    await arrive(store, clock, [paper], {paper.arxiv_id: {rl}})
    poster = RecordingPoster()
    await worker(store, poster, clock).deliver_once()
    v2 = make_paper(1, version=2, title="Revised")
    await arrive(store, clock, [v2], {v2.arxiv_id: {rl}})
    await arrive(store, clock, [v2], {v2.arxiv_id: {rl}})
    await worker(store, poster, clock).deliver_once()
    assert poster.cards(CHANNEL) == [paper.arxiv_id]


async def test_only_papers_arriving_after_the_follow_are_posted(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL")
    old = make_paper(1)
    await arrive(store, clock, [old], {old.arxiv_id: {rl}})
    await follow(store, clock, rl)
    poster = RecordingPoster()
    await worker(store, poster, clock).deliver_once()
    assert poster.posts == []


async def test_at_most_n_cards_per_cycle_and_the_rest_summarised(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL Post-Training")
    await follow(store, clock, rl)
    papers = [make_paper(i, published=clock.now() - timedelta(minutes=100 - i)) for i in range(13)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})
    poster = RecordingPoster()
    report = await worker(store, poster, clock, per_channel=10).deliver_once()
    assert (report.sent, report.summarised) == (10, 3)
    assert poster.cards(CHANNEL) == [p.arxiv_id for p in papers[:10]]  # in submission order
    assert poster.posts[-1].text == "+3 more RL Post-Training papers - /latest RL Post-Training"
    assert (await worker(store, poster, clock).deliver_once()).sent == 0


async def test_rate_limit_retries_later_with_backoff(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl)
    papers = [make_paper(i) for i in range(3)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})
    refusals = iter([True, True])

    def busy(post: Post) -> None:
        if next(refusals, False):
            raise RetryLater("429 Too Many Requests", retry_after=None)

    poster = RecordingPoster(before=busy)
    w = worker(store, poster, clock, backoff=30)
    assert (await w.deliver_once()).retried == 1 and poster.posts == []
    assert (await w.deliver_once()).sent == 0  # not due yet
    clock.advance(31)
    assert (await w.deliver_once()).retried == 1  # second refusal: waits 60 s now
    clock.advance(59)
    assert (await w.deliver_once()).sent == 0
    clock.advance(2)
    assert (await w.deliver_once()).sent == 3
    assert sorted(poster.cards(CHANNEL)) == sorted(p.arxiv_id for p in papers)


async def test_gives_up_after_max_attempts(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl)
    paper = make_paper(1)
    await arrive(store, clock, [paper], {paper.arxiv_id: {rl}})

    def always_busy(post: Post) -> None:
        raise RetryLater("503", retry_after=1)

    w = worker(store, RecordingPoster(before=always_busy), clock, max_attempts=3)
    for _ in range(3):
        await w.deliver_once()
        clock.advance(2)
    assert (await store.deliveries.counts(GUILD)) == {"failed": 1}


async def test_refused_channel_marks_follow_broken_and_spares_other_channels(
    store: Store, clock: FakeClock
) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl, channel=CHANNEL)
    await follow(store, clock, rl, channel=OTHER_CHANNEL)
    papers = [make_paper(i) for i in range(2)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})

    def deleted(post: Post) -> None:
        if post.channel_id == CHANNEL:
            raise ChannelGone("channel deleted (404 Unknown Channel)")

    poster = RecordingPoster(before=deleted)
    report = await worker(store, poster, clock).deliver_once()
    assert report.broken_channels == [CHANNEL] and report.failed == 2
    assert sorted(poster.cards(OTHER_CHANNEL)) == sorted(p.arxiv_id for p in papers)
    follows = {f.channel_id: f for f in await store.follows.for_guild(GUILD)}
    assert follows[CHANNEL].broken_reason == "channel deleted (404 Unknown Channel)"
    assert not follows[OTHER_CHANNEL].broken
    # a broken follow gets no new rows until it is fixed
    late = make_paper(9)
    await arrive(store, clock, [late], {late.arxiv_id: {rl}})
    await worker(store, RecordingPoster(), clock).deliver_once()
    assert (await store.deliveries.counts(GUILD))["failed"] == 2


@pytest.mark.parametrize("moment", ["before Discord saw it", "after Discord made it"])
async def test_crash_mid_delivery_then_restart_posts_each_paper_exactly_once(
    moment: str, store: Store, clock: FakeClock
) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl)
    papers = [make_paper(i, published=clock.now() - timedelta(minutes=10 - i)) for i in range(4)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})
    discord_made: list[Post] = []

    def die_before(post: Post) -> None:
        if post.papers == [papers[1].arxiv_id] and moment == "before Discord saw it":
            raise Crash

    def die_after(post: Post) -> None:
        if post.papers == [papers[1].arxiv_id] and moment == "after Discord made it":
            raise Crash

    poster = RecordingPoster(before=die_before, after=die_after)
    with pytest.raises(Crash):
        await worker(store, poster, clock).deliver_once()
    discord_made = list(poster.posts)
    # restart: a new worker, a poster that behaves, the same channel contents
    restarted = RecordingPoster(posts=discord_made)
    w = worker(store, restarted, clock)
    assert await w.recover_in_flight() == 1
    await w.deliver_once()
    assert restarted.cards(CHANNEL) == [p.arxiv_id for p in papers]


async def test_stopping_leaves_the_rest_queued(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl)
    papers = [make_paper(i) for i in range(3)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})
    w = worker(store, RecordingPoster(), clock)

    def stop_after_first(post: Post) -> None:
        w.stopping = True

    w.poster = RecordingPoster(after=stop_after_first)
    assert (await w.deliver_once()).sent == 1
    assert (await store.deliveries.counts(GUILD)) == {"pending": 2, "sent": 1}


async def test_digest_posts_once_a_day_at_its_hour_in_messages_of_ten(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl, mode="digest", hour=9)
    papers = [make_paper(i) for i in range(23)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})
    poster = RecordingPoster()
    w = worker(store, poster, clock)
    assert (await w.deliver_once()).sent == 0  # digest rows wait for their hour
    assert (await w.deliver_digests(hour=8)).sent == 0
    report = await w.deliver_digests(hour=9)
    assert report.sent == 23
    assert [len(p.papers) for p in poster.posts] == [10, 10, 3] and {p.kind for p in poster.posts} == {
        "digest"
    }
    assert (await w.deliver_digests(hour=9)).sent == 0


def too_big_over(papers: int, kinds: tuple[str, ...] = ("digest",)) -> Callable[[Post], None]:
    """Discord's answer to a post over its size limits: 400, here for posts of these kinds with more
    than `papers` papers."""

    def reject(post: Post) -> None:
        if post.kind in kinds and len(post.papers) > papers:
            raise PostRejected("Discord rejected the post (400: Invalid Form Body)")

    return reject


async def digest_of(store: Store, clock: FakeClock, count: int) -> list[Paper]:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl, mode="digest", hour=9)
    papers = [make_paper(i, published=clock.now() - timedelta(minutes=100 - i)) for i in range(count)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})
    return papers


async def test_a_digest_rejected_for_size_is_posted_in_halves_and_loses_nothing(
    store: Store, clock: FakeClock
) -> None:
    papers = await digest_of(store, clock, 10)
    poster = RecordingPoster(before=too_big_over(3))
    report = await worker(store, poster, clock).deliver_digests(hour=9)
    assert (report.sent, report.failed) == (10, 0)
    assert [len(p.papers) for p in poster.posts] == [2, 3, 2, 3]
    assert [a for p in poster.posts for a in p.papers] == [p.arxiv_id for p in papers]  # in order, once
    assert await store.deliveries.counts(GUILD) == {"sent": 10}
    assert len({p.nonce for p in poster.posts}) == 4


async def test_papers_rejected_even_alone_are_posted_as_lines(store: Store, clock: FakeClock) -> None:
    papers = await digest_of(store, clock, 3)
    poster = RecordingPoster(before=too_big_over(0, kinds=("digest", "card")))
    report = await worker(store, poster, clock).deliver_digests(hour=9)
    assert (report.sent, report.failed) == (3, 0)
    assert [(p.kind, p.papers) for p in poster.posts] == [("line", [p.arxiv_id]) for p in papers]


async def test_a_card_rejected_by_discord_is_posted_as_a_line(store: Store, clock: FakeClock) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl)
    paper = make_paper(1)
    await arrive(store, clock, [paper], {paper.arxiv_id: {rl}})
    poster = RecordingPoster(before=too_big_over(0, kinds=("card",)))
    assert (await worker(store, poster, clock).deliver_once()).sent == 1
    assert [(p.kind, p.papers, p.topics) for p in poster.posts] == [("line", [paper.arxiv_id], [("RL",)])]


async def test_only_a_paper_whose_line_is_rejected_too_is_marked_failed(
    store: Store, clock: FakeClock
) -> None:
    await digest_of(store, clock, 2)
    poster = RecordingPoster(before=too_big_over(0, kinds=("digest", "line")))
    report = await worker(store, poster, clock).deliver_digests(hour=9)
    assert (report.sent, report.failed) == (0, 2) and poster.posts == []
    assert await store.deliveries.counts(GUILD) == {"failed": 2}


async def test_a_rate_limit_while_posting_halves_leaves_the_rest_queued(
    store: Store, clock: FakeClock
) -> None:
    papers = await digest_of(store, clock, 10)
    busy = iter([False, True])  # the first half goes through, the second meets a 429

    def reject_or_busy(post: Post) -> None:
        too_big_over(5)(post)
        if next(busy, False):
            raise RetryLater("429 Too Many Requests", retry_after=60)

    poster = RecordingPoster(before=reject_or_busy)
    w = worker(store, poster, clock)
    first = await w.deliver_digests(hour=9)
    assert (first.sent, first.retried, first.failed) == (5, 5, 0)
    assert await store.deliveries.counts(GUILD) == {"sent": 5, "pending": 5}  # none stuck in 'sending'
    clock.advance(61)
    assert (await w.deliver_digests(hour=9)).sent == 5
    assert [a for p in poster.posts for a in p.papers] == [p.arxiv_id for p in papers]


async def test_each_follow_wins_over_digest_in_the_same_channel(store: Store, clock: FakeClock) -> None:
    rl, rm = await topic(store, clock, "RL"), await topic(store, clock, "RM")
    await follow(store, clock, rl, mode="digest")
    await follow(store, clock, rm, mode="each")
    paper = make_paper(1)
    await arrive(store, clock, [paper], {paper.arxiv_id: {rl, rm}})
    poster = RecordingPoster()
    await worker(store, poster, clock).deliver_once()
    assert poster.posts[0].topics == [("RL", "RM")]


async def test_unfollow_drops_pending_posts_not_wanted_by_another_follow(
    store: Store, clock: FakeClock
) -> None:
    rl, rm = await topic(store, clock, "RL"), await topic(store, clock, "RM")
    await follow(store, clock, rl)
    await follow(store, clock, rm)
    only_rl, both = make_paper(1), make_paper(2)
    await arrive(store, clock, [only_rl, both], {only_rl.arxiv_id: {rl}, both.arxiv_id: {rl, rm}})
    assert await store.follows.remove(GUILD, rl) == 1
    poster = RecordingPoster()
    await worker(store, poster, clock).deliver_once()
    assert poster.posts[0].papers == [both.arxiv_id] and poster.posts[0].topics == [("RM",)]
    assert len(poster.posts) == 1
    assert await store.follows.remove(GUILD + 1, rm) == 0  # another server cannot remove it


def test_more_papers_text_groups_by_topic() -> None:
    from bot.models import PendingDelivery

    def pending(topics: tuple[str, ...]) -> PendingDelivery:
        return PendingDelivery(1, GUILD, CHANNEL, "each", "pending", 0, make_paper(1), topics)

    text = more_papers_text([pending(("RL",)), pending(("RL", "RM")), pending(("Agents",))])
    assert text.splitlines() == ["+2 more RL papers - /latest RL", "+1 more Agents paper - /latest Agents"]


async def test_a_killed_workers_channel_waits_for_its_lease_then_another_worker_takes_it_over(
    store: Store, clock: FakeClock
) -> None:
    rl = await topic(store, clock, "RL")
    await follow(store, clock, rl)
    papers = [make_paper(i, published=clock.now() - timedelta(minutes=10 - i)) for i in range(3)]
    await arrive(store, clock, papers, {p.arxiv_id: {rl} for p in papers})
    # What a worker killed with SIGKILL leaves: its lease on the channel, and its first post made by Discord
    # but still 'sending' in the outbox. Its session is still shown running (on PostgreSQL, say a stuck
    # process; SQLite cannot tell): only the lease's expiry frees the channel (a session that ended frees it at
    # once: tests/test_delivery_sharing.py).
    killed = RecordingPoster()
    await killed.post_card(CHANNEL, papers[0], ["RL"], nonce_for(CHANNEL, papers[0].arxiv_id))
    await store.deliveries.keep_alive("killed")
    assert await store.deliveries.hold("killed", CHANNEL, clock.now(), clock.now() + timedelta(seconds=60))
    [first, *_] = await store.deliveries.for_channel(CHANNEL, mode="each", now=clock.now())
    await store.deliveries.mark_sending([first.id])

    attempted: list[str] = []
    other = RecordingPoster(posts=killed.posts, before=lambda post: attempted.extend(post.papers))
    w = worker(store, other, clock, lease_seconds=60)
    assert (await w.deliver_once()).sent == 0  # the channel is still the killed worker's
    assert await w.recover_in_flight() == 0  # nor may its rows be checked while its lease holds
    clock.advance(60)
    assert (await w.deliver_once()).sent == 2
    assert attempted == [p.arxiv_id for p in papers[1:]]  # the killed worker's post was found, not redone
    assert other.cards(CHANNEL) == [p.arxiv_id for p in papers]
    assert await store.deliveries.counts(GUILD) == {"sent": 3}

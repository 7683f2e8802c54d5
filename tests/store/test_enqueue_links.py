"""The outbox's topic links (DeliveryRepo.enqueue), on both back ends: a topic that wants a post already queued
is named on that post, whether the second enqueue changes the row or leaves it as it is; a paper not stored is
never queued."""

from __future__ import annotations

from bot.clock import FakeClock
from bot.models import Wanted
from bot.store import Store
from tests.factories import make_paper

GUILD, CHANNEL = 7, 70


async def test_later_topics_are_named_on_a_queued_post_and_unstored_papers_are_dropped(
    store: Store, clock: FakeClock
) -> None:
    paper = make_paper(1)
    await store.papers.upsert([paper], seen_at=clock.now())
    topics = [
        await store.topics.create(guild_id=GUILD, name=name, description="", query="ti:x", at=clock.now())
        for name in ("A", "B", "C")
    ]
    a, b, c = (t.id for t in topics)
    now = clock.now()
    await store.deliveries.enqueue([Wanted(GUILD, CHANNEL, paper.arxiv_id, "digest", a)], now)
    # a digest row wanted again as a digest is left as it is: B is still named on it
    await store.deliveries.enqueue(
        [
            Wanted(GUILD, CHANNEL, paper.arxiv_id, "digest", b),
            Wanted(GUILD, CHANNEL, "2611.99999", "each", c),
        ],
        now,
    )
    [digest] = await store.deliveries.for_channel(CHANNEL, mode="digest", now=now)
    assert digest.paper.arxiv_id == paper.arxiv_id and digest.topics == ("A", "B")
    await store.deliveries.enqueue([Wanted(GUILD, CHANNEL, paper.arxiv_id, "each", c)], now)  # upgraded
    [each] = await store.deliveries.for_channel(CHANNEL, mode="each", now=now)
    assert each.id == digest.id and each.topics == ("A", "B", "C")
    assert await store.deliveries.counts(GUILD) == {"pending": 1}

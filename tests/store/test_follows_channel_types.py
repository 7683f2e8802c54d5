"""A followed channel's kind (Discord's channel type), on both back ends: recorded by a follow for every follow of
the channel, kept when a follow is changed without it, corrected when a deliver process finds it changed."""

from __future__ import annotations

from bot.clock import FakeClock
from bot.store import Store

GUILD, CHANNEL = 7, 100
TEXT, NEWS, FORUM = 0, 5, 15


async def follow(store: Store, clock: FakeClock, name: str, channel_type: int | None) -> None:
    """Follow (or change the follow of) the server's topic `name` in the channel."""
    topic = await store.topics.find(GUILD, name) or await store.topics.create(
        guild_id=GUILD, name=name, description="", query="ti:x", at=clock.now()
    )
    await store.follows.upsert(
        guild_id=GUILD,
        channel_id=CHANNEL,
        topic_id=topic.id,
        mode="each",
        digest_hour=8,
        created_by=None,
        at=clock.now(),
        channel_type=channel_type,
    )


async def test_a_channels_kind_is_recorded_for_all_its_follows_and_kept_or_corrected(
    store: Store, clock: FakeClock
) -> None:
    await follow(store, clock, "A", None)  # a follow made before kinds were recorded
    assert await store.follows.channel_type(CHANNEL) is None
    await follow(store, clock, "B", TEXT)
    assert await store.follows.channel_type(CHANNEL) == TEXT
    await follow(store, clock, "A", None)  # changed without a kind (the terminal's follows): kept
    assert await store.follows.channel_type(CHANNEL) == TEXT
    await store.follows.set_channel_type(CHANNEL, FORUM)  # a deliver process found it changed
    assert await store.follows.channel_type(CHANNEL) == FORUM
    await follow(store, clock, "C", NEWS)  # every follow of the channel says the same
    assert await store.follows.channel_type(CHANNEL) == NEWS
    assert await store.follows.channel_type(CHANNEL + 1) is None

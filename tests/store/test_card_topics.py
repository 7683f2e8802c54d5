"""What a queued post's card names (the outbox on a real SQLite file): the most specific topics the paper matched
at or below the followed ones, of the catalog and the channel's server only."""

from __future__ import annotations

from dataclasses import replace

from bot.clock import FakeClock
from bot.intake import Intake
from bot.services.topics import TopicService
from bot.store import Store
from bot.topics.catalog import CatalogTopic, load_catalog
from bot.topics.index import TopicIndex
from bot.topics.query import parse_query
from tests.factories import make_paper

CHANNEL, GUILD, OTHER_GUILD = 100, 1, 2
PAPER = make_paper(
    1,
    title="On-policy distillation of a small student from its own samples",
    abstract="We train the student on sequences it generated, with token-level feedback from a teacher.",
)


def family() -> list[CatalogTopic]:  # RL Post-Training and On-Policy Distillation, as the catalog has them
    return [t for t in load_catalog() if t.slug in ("rl-post-training", "on-policy-distillation")]


async def test_a_card_names_the_most_specific_topic_of_the_servers_view(
    store: Store, clock: FakeClock
) -> None:
    index = TopicIndex(store, clock)
    await index.start(family())
    topics = TopicService(store, index, clock)
    rl = await topics.resolve(GUILD, "RL Post-Training")
    await store.follows.upsert(
        guild_id=GUILD,
        channel_id=CHANNEL,
        topic_id=rl.id,
        mode="each",
        digest_hour=8,
        created_by=None,
        at=clock.now(),
    )
    await topics.save_custom(OTHER_GUILD, "Student Samples", "ti:student", parent="RL Post-Training")
    await Intake(store, index, clock).store_papers([PAPER], announce=True)

    [queued] = await store.deliveries.for_channel(CHANNEL, mode="each", now=clock.now())
    # below RL Post-Training the paper matched On-Policy Distillation; another server's topic is never named
    assert queued.topics == ("On-Policy Distillation",)

    # the next release's child no longer matches it: the card falls back to the followed topic's name
    nothing = parse_query("ti:nothingmatches")
    changed = [replace(t, query=nothing) if t.slug == "on-policy-distillation" else t for t in family()]
    await TopicIndex(store, clock).start(changed)
    [queued] = await store.deliveries.for_channel(CHANNEL, mode="each", now=clock.now())
    assert queued.topics == ("RL Post-Training",)

"""Ratings teach the topic in the server that gave them, and only there: through the running bot, a 👎 on a
false hit keeps its look-alikes out of that server's channel after the next retraining while another server
following the same catalog topic still receives them; 👍 on a topic's papers lift a look-alike the query misses
into that server's suggestions only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.app import PaperBot
from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import Channel, Member
from bot.loopback.discord.records import SEND_MESSAGES
from bot.loopback.harness import running_paperbot
from bot.models import Paper
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.topics.scorer_corpus import corpus

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
TOPIC = "Speculative Decoding"  # a catalog topic: both servers follow the very same topic

PAPYRUS = (
    "Speculative decoding of damaged papyrus scrolls",
    "We reconstruct missing Greek letters on carbonised papyrus scrolls from Herculaneum with multispectral "
    "imaging, ink detection and philology.",
)
DRAFTING = (
    "Draft tokens verified in parallel by the target model",
    "Lossless acceleration of autoregressive language model inference: a small drafter proposes tokens, the "
    "target model verifies them in one parallel pass, and the acceptance rate sets the speed-up.",
)
UNNAMED = (  # the same work in words the query does not know
    "Lossless acceleration of autoregressive language model inference with a small drafter",
    "A small drafter proposes tokens, the target model checks them in one parallel pass, and the acceptance "
    "rate sets the speed-up of autoregressive language model inference.",
)


def paper(n: int, text: tuple[str, str]) -> Paper:
    return make_paper(n, title=text[0], abstract=text[1], published=NOW)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[PaperBot, FakeDiscord, list[tuple[Channel, Member]]]]:
    async with FakeDiscord() as discord, LoopbackArxiv() as arxiv:
        labs = []
        for name in ("Lab A", "Lab B"):
            guild = discord.add_guild(name)
            labs.append(
                (
                    discord.add_text_channel(guild, "papers"),
                    discord.add_member(guild, "alice", permissions=SEND_MESSAGES),
                )
            )
        async with running_paperbot(tmp_path, discord, arxiv, clock=FakeClock(NOW)) as bot:
            for channel, _ in labs:
                follows = bot.services.follows
                await follows.follow(
                    await follows.plan(channel.guild_id, channel.id, TOPIC, match="suggested")
                )
            await bot.ctx.intake.store_papers(corpus(), announce=False)  # a history for the features
            await bot.services.topics.retrain()
            yield bot, discord, labs
        assert discord.violations == []


async def arrive(bot: PaperBot, discord: FakeDiscord, papers: list[Paper], labs: Any) -> list[set[str]]:
    """Papers polled and posted: the ids each lab's channel received."""
    before = [len(discord.messages(channel.id)) for channel, _ in labs]
    await bot.ctx.intake.store_papers(papers, announce=True)
    await bot.worker.deliver_once()
    return [
        {m["embeds"][0]["url"].rsplit("/", 1)[1] for m in discord.messages(channel.id)[start:]}
        for (channel, _), start in zip(labs, before, strict=True)
    ]


async def rate(discord: FakeDiscord, channel: Channel, member: Member, arxiv_id: str, kind: str) -> str:
    card = next(m for m in discord.messages(channel.id) if m["embeds"][0]["url"].endswith(arxiv_id))
    response = await (await discord.click(card, f"pw:{kind}:0:{arxiv_id}", member)).wait_response()
    return str(response["data"]["content"])


async def test_a_servers_thumbs_down_keeps_look_alikes_out_of_its_channel_only(world: Any) -> None:
    bot, discord, labs = world
    (a_channel, a_alice), _ = labs
    false_hit = paper(1, PAPYRUS)
    assert await arrive(bot, discord, [false_hit], labs) == [{false_hit.arxiv_id}] * 2
    assert "does not belong" in await rate(discord, a_channel, a_alice, false_hit.arxiv_id, "down")

    look_alike, before_retraining = paper(2, PAPYRUS), paper(3, PAPYRUS)
    # Not before the next retraining: the rating is stored, not yet learned.
    assert await arrive(bot, discord, [before_retraining], labs) == [{before_retraining.arxiv_id}] * 2
    # (A false hit nobody rejects counts as one the channel keeps: its members reject this one too.)
    assert "does not belong" in await rate(discord, a_channel, a_alice, before_retraining.arxiv_id, "down")
    await bot.services.topics.retrain()
    real = paper(4, DRAFTING)
    got_a, got_b = await arrive(bot, discord, [look_alike, real], labs)
    assert got_a == {real.arxiv_id}  # Lab A no longer receives papyrus "speculative decoding"
    assert got_b == {look_alike.arxiv_id, real.arxiv_id}  # Lab B is untouched by Lab A's ratings


async def test_a_servers_thumbs_up_lifts_a_look_alike_the_query_misses_into_its_suggestions_only(
    world: Any,
) -> None:
    bot, discord, labs = world
    (a_channel, a_alice), _ = labs
    liked = [paper(10, DRAFTING), paper(11, DRAFTING)]
    assert await arrive(bot, discord, liked, labs) == [{p.arxiv_id for p in liked}] * 2
    for p in liked:
        assert "belongs in" in await rate(discord, a_channel, a_alice, p.arxiv_id, "up")
    await bot.services.topics.retrain()

    missed = paper(12, UNNAMED)
    got_a, got_b = await arrive(bot, discord, [missed], labs)
    assert got_a == {missed.arxiv_id} and got_b == set()
    # The lifted card is rateable like any other of the channel's.
    assert "does not belong" in await rate(discord, a_channel, a_alice, missed.arxiv_id, "down")

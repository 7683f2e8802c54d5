"""The learned scorer through the running bot and the loopback Discord: suggested matches stored as such,
posted with their marker only to follows that ask for them, marked in /latest, left out of /momentum's counts,
retrained when a topic's query changes, and query-only topics named in /topics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import PaperBot
from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import EPHEMERAL, MANAGE_GUILD, VIEW_CHANNEL
from bot.loopback.discord.records import SEND_MESSAGES, USE_APPLICATION_COMMANDS
from bot.loopback.harness import running_paperbot
from bot.models import Paper
from bot.render import SUGGESTED_NOTE
from bot.scheduler import Scheduler
from bot.services.follows import FollowError
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.peek import store_of
from tests.topics.scorer_corpus import ELSEWHERE, UNSAID, corpus

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
ADMIN = VIEW_CHANNEL | SEND_MESSAGES | USE_APPLICATION_COMMANDS | MANAGE_GUILD
TOPIC = "Error Correction"
QUERY = '"quantum error correction"'


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[PaperBot, FakeDiscord, Any]]:
    async with FakeDiscord() as discord, LoopbackArxiv() as arxiv:
        guild = discord.add_guild("Lab")
        suggested = discord.add_text_channel(guild, "suggested")
        exact = discord.add_text_channel(guild, "exact")
        admin = discord.add_member(guild, "admin", permissions=ADMIN)
        async with running_paperbot(tmp_path, discord, arxiv, clock=FakeClock(NOW)) as bot:
            yield bot, discord, (guild, suggested, exact, admin)
        assert discord.violations == []


def fresh(paper: Paper, n: int) -> Paper:
    """The paper as a new arrival: another id, submitted after the history."""
    when = NOW - timedelta(days=1)  # in the last complete day: inside momentum's window
    return make_paper(n, title=paper.title, abstract=paper.abstract, published=when)


async def run(discord: FakeDiscord, where: Any, command: str, **options: Any) -> dict[str, Any]:
    guild, _, _, admin = where
    channel = options.pop("in_channel")
    interaction = await discord.invoke(
        guild, channel, admin, command, [{"name": k, "value": v} for k, v in options.items()]
    )
    response = await interaction.wait_response()
    if response["type"] == 5:  # deferred: the follow-up holds the answer
        [message] = await interaction.wait_followups(1)
        return message
    return response["data"]


async def test_a_suggested_paper_reaches_only_the_follow_that_asked_with_its_marker(world: Any) -> None:
    bot, discord, where = world
    guild, suggested, exact, _ = where
    await bot.ctx.intake.store_papers(corpus(), announce=False)  # the history: 40 papers say the words
    await run(discord, where, "follow", in_channel=suggested, topic=TOPIC, query=QUERY, match="suggested")
    await run(discord, where, "follow", in_channel=exact, topic=TOPIC)
    topic = await bot.services.topics.find(guild.id, TOPIC)
    assert topic is not None
    assert not bot.services.topics.scorer_status(topic).scored  # no model yet: query-only
    await bot.services.topics.retrain()  # the daily job
    assert bot.services.topics.scorer_status(topic).scored

    arrived = [fresh(UNSAID, 5001), fresh(ELSEWHERE, 5002), fresh(corpus()[0], 5003)]
    report = await bot.ctx.intake.store_papers(arrived, announce=True)
    assert report.suggested == {arrived[0].arxiv_id: {topic.id}}
    await bot.worker.deliver_once()

    cards = {
        channel.name: {
            m["embeds"][0]["url"]: m["embeds"][0]["footer"]["text"] for m in discord.messages(channel.id)
        }
        for channel in (suggested, exact)
    }
    assert set(cards["exact"]) == {arrived[2].abs_url}  # the query's match only
    assert set(cards["suggested"]) == {arrived[0].abs_url, arrived[2].abs_url}
    assert f"({SUGGESTED_NOTE})" in cards["suggested"][arrived[0].abs_url]
    assert SUGGESTED_NOTE not in cards["suggested"][arrived[2].abs_url]

    # /latest lists it, marked; momentum and the exact readers count the query's matches only
    latest = await run(discord, where, "latest", in_channel=exact, topic=TOPIC, count=3)
    lines = [line for line in latest["content"].splitlines() if line[:2] in ("1.", "2.", "3.")]
    marked = [line for line in lines if SUGGESTED_NOTE in line]
    assert len(marked) == 1 and UNSAID.title[:30] in marked[0]
    store = store_of(bot)
    assert arrived[0].arxiv_id not in await store.topics.matched_ids(topic.id)
    week = (NOW - timedelta(days=7), NOW + timedelta(days=1))
    assert await bot.services.history.count_matches(topic, *week) == 1
    momentum = await bot.services.momentum.topic(topic, guild_id=guild.id)
    window = (momentum.window_start, momentum.window_end)
    assert momentum.current == await bot.services.history.count_matches(topic, *window)  # exact only
    assert momentum.suggested == 1  # shown beside
    assert momentum.sentence().endswith("The learned scorer suggests 1 more paper, not counted here.")


async def test_a_changed_query_retrains_its_scorer_and_topics_names_query_only_topics(world: Any) -> None:
    bot, discord, where = world
    guild, suggested, _, _ = where
    await bot.ctx.intake.store_papers([*corpus(), UNSAID], announce=False)
    await run(discord, where, "follow", in_channel=suggested, topic=TOPIC, query="surface AND code")
    await bot.services.topics.retrain()
    topic = await bot.services.topics.find(guild.id, TOPIC)
    assert topic is not None
    before = bot.services.topics.scorer_status(topic)

    await run(discord, where, "follow", in_channel=suggested, topic=TOPIC, query=QUERY)
    topic = await bot.services.topics.find(guild.id, TOPIC)
    assert topic is not None and topic.query == QUERY
    await bot.services.topics.retrained()  # the retraining the change started in the background
    after = bot.services.topics.scorer_status(topic)
    assert after.scored and after.query == QUERY and before.query != QUERY

    answer = await run(discord, where, "topics", in_channel=suggested)
    assert answer["flags"] & EPHEMERAL
    tree = answer["embeds"][1]
    lines = tree["description"].splitlines()
    # catalog topics with too few papers here stay query-only and say so; the server's trained topic does not
    assert any("Speculative Decoding" in line and "query-only" in line for line in lines)
    assert any(TOPIC in line and "query-only" not in line for line in lines)
    assert "Query-only" in tree["footer"]["text"]


async def test_follow_refuses_an_unknown_match_kind_before_changing_anything(world: Any) -> None:
    bot, _, where = world
    guild, suggested, _, _ = where
    with pytest.raises(FollowError, match="match is what a follow receives"):
        await bot.services.follows.plan(guild.id, suggested.id, "RL Post-Training", match="fuzzy")
    assert await bot.services.follows.in_server(guild.id) == []


async def test_the_daily_job_trains_a_deployment_without_a_model(world: Any) -> None:
    bot, discord, where = world
    guild, suggested, _, _ = where
    await bot.ctx.intake.store_papers(corpus(), announce=False)
    await run(discord, where, "follow", in_channel=suggested, topic=TOPIC, query=QUERY)
    topic = await bot.services.topics.find(guild.id, TOPIC)
    assert topic is not None
    assert bot.services.topics.scorer is not None and bot.services.topics.scorer.needs_training
    await Scheduler(bot.ctx, bot.worker).retrain()  # the job the scheduler runs daily
    assert bot.services.topics.scorer_status(topic).scored
    model = Path(str(bot.settings.database_path) + ".scorer") / "scorer-model.npz"
    assert model.exists()

"""bot.discord_poster through the real bot's discord.py client against the loopback Discord: each answer Discord
can give a post becomes the outcome the delivery worker acts on (posted, retry later, channel gone, rejected),
in a text channel and in a forum; and, as a deliver-only process posts (a client logged in to the REST API alone,
no gateway cache), by each channel's kind as /follow recorded it, without asking Discord for the channel first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import discord as discord_py
import pytest

from bot.clock import FakeClock
from bot.delivery import ChannelGone, PostRejected, RetryLater
from bot.discord_poster import DiscordPoster
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import VIEW_CHANNEL, Channel, pointing_discord_at
from bot.loopback.harness import running_paperbot
from bot.render import thread_name
from bot.store import Store
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord

PAPER = make_paper(1)
MESSAGES = "POST /channels/{id}/messages"
CHANNEL_FETCH = ("GET", "/channels/{id}")
TEXT, FORUM = discord_py.ChannelType.text.value, discord_py.ChannelType.forum.value


@dataclass
class Lab:
    discord: FakeDiscord
    channel: Channel
    forum: Channel
    poster: DiscordPoster


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """The poster built on the running bot's own client (its options are the ones production posts with)."""
    async with FakeDiscord() as discord, LoopbackArxiv() as arxiv:
        guild = discord.add_guild("Lab")
        channel = discord.add_text_channel(guild, "papers")
        forum = discord.add_forum_channel(guild, "paper-forum")
        async with running_paperbot(tmp_path, discord, arxiv, clock=FakeClock()) as bot:
            yield Lab(discord, channel, forum, DiscordPoster(bot))
        assert discord.violations == []


async def test_a_card_is_one_message_with_the_nonce_and_is_found_again_after_a_restart(lab: Lab) -> None:
    message_id = await lab.poster.post_card(lab.channel.id, PAPER, ["RL Post-Training"], "nonce-1")
    [message] = lab.discord.messages(lab.channel.id)
    assert int(message["id"]) == message_id
    assert [e["url"] for e in message["embeds"]] == [PAPER.abs_url]
    [request] = lab.discord.requests_to("POST", "/channels/{id}/messages")
    assert request.json["nonce"] == "nonce-1"
    # What recovery asks after a crash: which of these papers does the channel already show?
    other = make_paper(2)
    assert await lab.poster.already_posted(lab.channel.id, [PAPER, other]) == {PAPER.arxiv_id}


@pytest.mark.parametrize(
    ("status", "answers"),
    [
        # discord.py waits out a 429 itself (here retry_after is 0) and gives up after five: then it is ours.
        (429, 5),
        # 503 reaches the poster at once (discord.py retries 500, 502 and 504 itself, sleeping seconds).
        (503, 1),
    ],
)
async def test_rate_limits_and_server_errors_are_retried_later(lab: Lab, status: int, answers: int) -> None:
    lab.discord.fail_next(MESSAGES, status, count=answers, retry_after=0.0)
    with pytest.raises(RetryLater, match=f"Discord answered {status}"):
        await lab.poster.post_card(lab.channel.id, PAPER, ["RL"], "nonce-1")
    assert lab.discord.messages(lab.channel.id) == []
    # The next attempt of the same post goes through: nothing about the channel was given up.
    assert await lab.poster.post_card(lab.channel.id, PAPER, ["RL"], "nonce-1") is not None
    assert len(lab.discord.messages(lab.channel.id)) == 1


async def test_a_channel_the_bot_may_no_longer_post_in_is_gone(lab: Lab) -> None:
    lab.discord.set_bot_permissions(lab.channel, VIEW_CHANNEL)  # Send Messages taken away
    with pytest.raises(ChannelGone, match="403: Missing Permissions"):
        await lab.poster.post_card(lab.channel.id, PAPER, ["RL"], "nonce-1")
    with pytest.raises(ChannelGone, match="403"):
        await lab.poster.post_text(lab.channel.id, "and 3 more papers", "nonce-2")
    assert lab.discord.messages(lab.channel.id) == []


async def test_a_deleted_or_unknown_channel_is_gone(lab: Lab) -> None:
    lab.discord.delete_channel(lab.channel)
    with pytest.raises(ChannelGone, match="404"):
        await lab.poster.post_card(lab.channel.id, PAPER, ["RL"], "nonce-1")
    # A channel the client never saw is looked up over REST first; Discord's 404 there means the same.
    with pytest.raises(ChannelGone, match="404"):
        await lab.poster.post_card(123_456_789, PAPER, ["RL"], "nonce-1")
    with pytest.raises(ChannelGone, match="404"):
        await lab.poster.already_posted(123_456_789, [PAPER])


async def test_a_post_discord_refuses_as_malformed_is_rejected_and_the_channel_kept(lab: Lab) -> None:
    lab.discord.fail_next(MESSAGES, 400)
    with pytest.raises(PostRejected, match="Discord rejected the post \\(400: Invalid Form Body\\)"):
        await lab.poster.post_card(lab.channel.id, PAPER, ["RL"], "nonce-1")
    # Only that post was bad: the channel still takes the next one.
    assert await lab.poster.post_card(lab.channel.id, make_paper(2), ["RL"], "nonce-2") is not None


async def test_a_forum_gets_each_card_and_each_digest_as_a_post_of_its_own(lab: Lab) -> None:
    card_id = await lab.poster.post_card(lab.forum.id, PAPER, ["RL"], "nonce-1")
    digest_id = await lab.poster.post_digest(
        lab.forum.id, [(make_paper(2), ["RL"]), (make_paper(3), ["GRPO"])], "nonce-2"
    )
    card, digest = lab.discord.threads(lab.forum.id)
    assert (int(card["id"]), int(digest["id"])) == (card_id, digest_id)  # a post's starter shares its id
    assert card["name"] == thread_name(PAPER)
    assert [e["url"] for e in card["message"]["embeds"]] == [PAPER.abs_url]
    assert digest["name"] == "2 new papers: GRPO · RL"
    assert len(digest["message"]["embeds"]) == 2
    assert lab.discord.messages(lab.forum.id) == []  # never a plain message in a forum


# ---------------------------------------------------------------------------------------------------------
# A deliver-only process: no gateway, so no channel cache


@pytest.fixture
async def rest_client() -> AsyncIterator[tuple[FakeDiscord, discord_py.Client]]:
    """A client logged in to the loopback Discord's REST API only, as a deliver-only process is."""
    async with FakeDiscord() as discord:
        client = discord_py.Client(intents=discord_py.Intents(guilds=True))  # the bot's; no gateway opened
        with pointing_discord_at(discord):
            await client.login(discord.token)
            try:
                yield discord, client
            finally:
                await client.close()
        assert discord.violations == []


async def followed(store: Store, channel: Channel, channel_type: int | None) -> None:
    """A follow of the channel, its kind recorded as /follow records it (None: a follow made before)."""
    topic = await store.topics.create(
        guild_id=channel.guild_id, name=f"T{channel.id}", description="", query="ti:x", at=NOW
    )
    await store.follows.upsert(
        guild_id=channel.guild_id,
        channel_id=channel.id,
        topic_id=topic.id,
        mode="each",
        digest_hour=8,
        created_by=None,
        at=NOW,
        channel_type=channel_type,
    )


NOW = make_paper(1).published


async def test_a_recorded_text_channel_is_posted_to_without_asking_discord_for_it(
    rest_client: tuple[FakeDiscord, discord_py.Client], store: Store
) -> None:
    discord, client = rest_client
    channel = discord.add_text_channel(discord.add_guild("Lab"), "papers")
    await followed(store, channel, TEXT)
    poster = DiscordPoster(client, channel_types=store.follows)
    await poster.post_card(channel.id, PAPER, ["RL"], "nonce-1")
    await poster.post_text(channel.id, "+3 more RL papers", "nonce-2")
    assert await poster.already_posted(channel.id, [PAPER, make_paper(2)]) == {PAPER.arxiv_id}
    assert len(discord.messages(channel.id)) == 2
    # Each request counts under Discord's global limit: none spent on the channel itself.
    assert discord.requests_to(*CHANNEL_FETCH) == []


async def test_a_channel_of_unknown_kind_is_fetched_once_and_its_kind_recorded_for_every_process(
    rest_client: tuple[FakeDiscord, discord_py.Client], store: Store
) -> None:
    discord, client = rest_client
    guild = discord.add_guild("Lab")
    channel, forum = discord.add_text_channel(guild, "papers"), discord.add_forum_channel(guild, "forum")
    await followed(store, channel, None)
    await followed(store, forum, None)
    first = DiscordPoster(client, channel_types=store.follows)
    for n in (1, 2):
        await first.post_card(channel.id, make_paper(n), ["RL"], f"nonce-{n}")
        await first.post_card(forum.id, make_paper(n), ["RL"], f"nonce-{n}")
    assert len(discord.requests_to(*CHANNEL_FETCH)) == 2  # each once
    assert (await store.follows.channel_type(channel.id), await store.follows.channel_type(forum.id)) == (
        TEXT,
        FORUM,
    )
    second = DiscordPoster(client, channel_types=store.follows)  # another deliver process
    await second.post_card(channel.id, make_paper(3), ["RL"], "nonce-3")
    assert len(discord.requests_to(*CHANNEL_FETCH)) == 2
    assert len(discord.messages(channel.id)) == 3 and len(discord.threads(forum.id)) == 2


async def test_a_channel_whose_kind_changed_gets_the_post_once_as_it_is_now_and_a_deleted_one_is_gone(
    rest_client: tuple[FakeDiscord, discord_py.Client], store: Store
) -> None:
    discord, client = rest_client
    guild = discord.add_guild("Lab")
    now_a_forum, deleted = discord.add_forum_channel(guild, "forum"), discord.add_text_channel(guild, "old")
    await followed(store, now_a_forum, TEXT)  # recorded when it was a text channel
    await followed(store, deleted, TEXT)
    poster = DiscordPoster(client, channel_types=store.follows)
    assert await poster.post_card(now_a_forum.id, PAPER, ["RL"], "nonce-1") is not None
    [thread] = discord.threads(now_a_forum.id)
    assert [e["url"] for e in thread["message"]["embeds"]] == [PAPER.abs_url]
    assert await store.follows.channel_type(now_a_forum.id) == FORUM  # recorded as it is now
    # The one message Discord refused (a forum takes none): the loopback notes it as the bot's mistake.
    assert [v.split(":")[0] for v in discord.violations] == [f"POST /channels/{now_a_forum.id}/messages"]
    discord.violations.clear()
    await poster.post_card(now_a_forum.id, make_paper(2), ["RL"], "nonce-2")
    assert len(discord.threads(now_a_forum.id)) == 2

    discord.delete_channel(deleted)
    with pytest.raises(ChannelGone, match="404"):
        await poster.post_card(deleted.id, PAPER, ["RL"], "nonce-1")
    with pytest.raises(ChannelGone, match="404"):
        await poster.already_posted(deleted.id, [PAPER])
    assert discord.messages(deleted.id) == []


async def test_a_post_made_again_with_its_nonce_shows_once_in_a_text_channel_not_in_a_forum(
    rest_client: tuple[FakeDiscord, discord_py.Client], store: Store
) -> None:
    discord, client = rest_client
    guild = discord.add_guild("Lab")
    channel, forum = discord.add_text_channel(guild, "papers"), discord.add_forum_channel(guild, "forum")
    await followed(store, channel, TEXT)
    await followed(store, forum, FORUM)
    poster = DiscordPoster(client, channel_types=store.follows)
    assert await poster.repeats_safely(channel.id)
    first = await poster.post_card(channel.id, PAPER, ["RL"], "nonce-1")
    assert await poster.post_card(channel.id, PAPER, ["RL"], "nonce-1") == first  # Discord's answer: the same
    assert len(discord.messages(channel.id)) == 1
    assert not await poster.repeats_safely(forum.id)  # a forum's posts carry no nonce: its threads are read

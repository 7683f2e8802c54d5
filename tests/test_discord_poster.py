"""bot.discord_poster through the real bot's discord.py client against the loopback Discord: each answer Discord
can give a post becomes the outcome the delivery worker acts on (posted, retry later, channel gone, rejected),
in a text channel and in a forum."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.delivery import ChannelGone, PostRejected, RetryLater
from bot.discord_poster import DiscordPoster
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import VIEW_CHANNEL, Channel
from bot.loopback.harness import running_paperbot
from bot.render import thread_name
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord

PAPER = make_paper(1)
MESSAGES = "POST /channels/{id}/messages"


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

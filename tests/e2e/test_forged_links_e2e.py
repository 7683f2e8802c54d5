"""No text from a paper forms a link in what the bot posts or answers (cards, digests, /latest, /search,
/paper): through the real client against the loopback Discord. Only the bot's own links are links."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import ALL_PERMISSIONS
from bot.loopback.harness import running_paperbot
from bot.models import Author, Paper
from tests.cogs.world import answer
from tests.e2e.helpers import first_poll, follow
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.markdown_links import live_links

FORGED = (
    "We cite [1] and release wombat code at [github.com/lab/repo](https://evil.example/phish); "
    "mirror: https://evil.example/x and <https://evil.example/y>."
)


def forged_papers(clock: FakeClock) -> list[Paper]:
    return [
        make_paper(
            700 + i,
            title=f"GRPO post-training [{i}] [arxiv.org/abs/2611.{i}](https://evil.example/t{i})",
            abstract=FORGED,
            comment=FORGED,
            journal_ref=FORGED,
            authors=(Author("[Ada](https://evil.example/a)", (FORGED,)), Author("Alan Turing")),
            published=clock.now() - timedelta(hours=1 + i),
        )
        for i in range(2)
    ]


def markdown_of(message: dict[str, Any]) -> list[str]:
    """The parts of a message Discord renders as markdown: content, descriptions, field values."""
    parts = [message.get("content") or ""]
    for embed in message.get("embeds") or []:
        parts.append(embed.get("description") or "")
        parts += [f["value"] for f in embed.get("fields") or []]
    return parts


def assert_only_own_links(message: dict[str, Any], papers: list[Paper]) -> None:
    own = {p.abs_url for p in papers}
    for text in markdown_of(message):
        assert set(live_links(text)) <= own, text


async def test_no_card_digest_or_answer_carries_a_link_from_a_papers_text(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    papers_channel = discord.add_text_channel(guild, "papers")
    digest_channel = discord.add_text_channel(guild, "digest")
    ada = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, papers_channel.id, "RL Post-Training")
        await follow(bot, guild.id, digest_channel.id, "RL Post-Training", mode="digest")
        forged = forged_papers(clock)
        arxiv.papers = forged
        await bot.ctx.ingestor().poll_once()
        assert (await bot.worker.deliver_once()).sent == 2
        assert (await bot.worker.deliver_digests(hour=8)).sent == 2
        posted = discord.messages(papers_channel.id) + discord.messages(digest_channel.id)
        assert len(posted) == 3
        for message in posted:
            assert_only_own_links(message, forged)
        # The text still reads as written: the forged link shows as text.
        assert (
            r"\[github.com/lab/repo\](https\://evil.example/phish)" in posted[0]["embeds"][0]["description"]
        )

        for command, options in [
            ("latest", [{"name": "topic", "value": "RL Post-Training"}]),
            ("search", [{"name": "query", "value": "wombat"}]),
            ("paper", [{"name": "id", "value": forged[0].arxiv_id}]),
        ]:
            reply = await answer(await discord.invoke(guild, papers_channel, ada, command, options))
            assert "evil.example" in " ".join(markdown_of(reply)), command
            assert_only_own_links(reply, forged)

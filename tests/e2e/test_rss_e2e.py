"""arXiv's RSS announcement feed on the bot's own schedule, through the real client against the loopback Discord
and arXiv: a paper only the feed announces is posted once, its card saying how it was announced; /paper shows the
same line and /status the feed's state."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv, rss_feed
from bot.loopback.discord import ALL_PERMISSIONS
from bot.loopback.harness import running_paperbot
from bot.scheduler import Scheduler
from tests.e2e.helpers import embed_urls, first_poll, follow
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord


def description(message: dict[str, Any]) -> str:
    return str(message["embeds"][0].get("description") or "")


async def test_a_paper_only_the_feed_announces_is_posted_once_with_its_announcement(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, channel.id, "RL Post-Training")
        # Submitted twelve days before its announcement: the API's poll never looks that far back.
        late = make_paper(
            1,
            title="GRPO post-training makes small language models better at math",
            categories=("cs.CV", "cs.LG"),
            primary_category="cs.CV",
            published=clock.now() - timedelta(days=12),
        )
        other = make_paper(2, title="Sim-to-real transfer for legged robots", published=late.published)
        arxiv.papers = [late, other]
        arxiv.set_rss(rss_feed([(late, "cross"), (other, "new")], announced=clock.now()))
        scheduler = Scheduler(bot.ctx, bot.worker)
        await scheduler.poll()  # the job the bot runs every POLL_INTERVAL_MINUTES: API, feed, posts

        [message] = discord.messages(channel.id)
        assert embed_urls([message]) == [late.abs_url]
        meta = description(message)
        assert f"{late.published.date().isoformat()} · **cs.CV** (+cs.LG) · Cross-listed from cs.CV" in meta

        clock.advance(1800)
        await scheduler.poll()  # the feed unchanged (a 304), the poll empty: nothing posted twice
        assert len(discord.messages(channel.id)) == 1
        assert [r.path for r in arxiv.requests if r.endpoint == "rss"] == ["/rss/cs.AI+cs.CL+cs.LG"] * 2

        lookup = await discord.invoke(
            guild, channel, admin, "paper", [{"name": "id", "value": late.arxiv_id}]
        )
        card = (await lookup.wait_response())["data"]
        assert "Cross-listed from cs.CV" in card["embeds"][0]["description"]

        status = await discord.invoke(guild, channel, admin, "status")
        [embed] = (await status.wait_response())["data"]["embeds"]
        polling = next(f["value"] for f in embed["fields"] if f["name"] == "arXiv polling")
        assert "`arxiv-api:cs.AI,cs.CL,cs.LG`: last success" in polling
        assert "`arxiv-rss:cs.AI,cs.CL,cs.LG`: last success" in polling and "⚠️" not in polling
    assert discord.violations == []

"""/status through the real client against the loopback Discord and arXiv: polls, errors, skipped entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import discord as dpy

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.atom import RawEntry, entry_xml, error_feed
from bot.loopback.discord import EPHEMERAL, MANAGE_GUILD
from bot.loopback.harness import running_paperbot
from tests.cogs.world import MEMBER, RL, OverwriteDiscord, invoke, public_reply
from tests.factories import plain_paper, rl_paper
from tests.fakes.hostile import hostile_entry
from tests.markdown_links import live_links

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def fields_of(response: dict[str, Any]) -> dict[str, str]:
    assert response["type"] == 4 and response["data"]["flags"] & EPHEMERAL
    [embed] = response["data"]["embeds"]
    return {f["name"]: f["value"] for f in embed["fields"]}


async def test_status_shows_polls_papers_posts_and_broken_follows(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    async with OverwriteDiscord() as discord, LoopbackArxiv() as arxiv:
        guild = discord.add_guild("Lab A")
        papers = discord.add_text_channel(guild, "papers")
        admin = discord.add_member(guild, "admin", permissions=MEMBER | MANAGE_GUILD)
        guild_b = discord.add_guild("Lab B")
        b_channel = discord.add_text_channel(guild_b, "general")
        b_member = discord.add_member(guild_b, "someone", permissions=MEMBER)
        arxiv.papers = [rl_paper(1, published=NOW - timedelta(days=1)), plain_paper(2)]
        async with running_paperbot(tmp_path, discord, arxiv, clock=clock, poll_interval_minutes=30) as bot:

            async def status(where: Any = papers, who: Any = admin, in_guild: Any = guild) -> dict[str, str]:
                return fields_of(
                    await (await invoke(discord, in_guild, where, who, "status")).wait_response()
                )

            fresh = await status()
            assert "No poll has run yet" in fresh["arXiv polling"] and fresh["Papers stored"] == "0"

            assert (await bot.ctx.ingestor().poll_once()).complete
            await public_reply(await invoke(discord, guild, papers, admin, "follow", topic=RL))
            arxiv.papers.append(rl_paper(3, published=NOW - timedelta(hours=2)))
            await bot.ctx.ingestor().poll_once()
            assert (await bot.worker.deliver_once()).sent == 1

            healthy = await status()
            [source] = (await bot.services.status.of_server(guild.id)).sources
            assert source.last_success is not None
            next_poll = dpy.utils.format_dt(source.last_success + timedelta(minutes=30), "R")
            assert f"next poll {next_poll}" in healthy["arXiv polling"]
            assert "⚠️" not in healthy["arXiv polling"]
            assert healthy["Papers stored"] == "3"
            assert healthy["Posts in this server"] == "0 queued · 1 sent · 0 failed"
            assert healthy["Broken follows"] == "None."

            discord.delete_channel(papers)
            arxiv.papers.append(rl_paper(4, published=NOW - timedelta(hours=1)))
            await bot.ctx.ingestor().poll_once()
            assert (await bot.worker.deliver_once()).broken_channels == [papers.id]
            arxiv.fail_next(500, count=50)
            assert not (await bot.ctx.ingestor().poll_once()).complete
            clock.advance(31 * 60)

            # #papers is gone, so ask from another channel of the server
            other = discord.add_text_channel(guild, "other")
            troubled = await status(where=other)
            polling = troubled["arXiv polling"]
            assert "arxiv-api:" in polling and "next poll due now" in polling
            assert "⚠️ 1 failed poll" in polling and "500" in polling
            assert troubled["Posts in this server"] == "0 queued · 1 sent · 1 failed"
            broken = troubled["Broken follows (1)"]
            assert f"<#{papers.id}>" in broken and "404" in broken
            assert "/follow again" in broken and "/unfollow" in broken

            elsewhere = await status(where=b_channel, who=b_member, in_guild=guild_b)
            assert elsewhere["Posts in this server"] == "0 queued · 0 sent · 0 failed"
            assert "Broken follows (1)" not in elsewhere and elsewhere["Papers stored"] == "4"
        assert discord.violations == []


async def test_status_shows_every_poll_error_and_the_entries_skipped(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    async with OverwriteDiscord() as discord, LoopbackArxiv() as arxiv:
        guild = discord.add_guild("Lab A")
        papers = discord.add_text_channel(guild, "papers")
        admin = discord.add_member(guild, "admin", permissions=MEMBER | MANAGE_GUILD)
        future = plain_paper(9, published=datetime(2099, 1, 1, tzinfo=UTC))
        arxiv.papers = [
            rl_paper(1, published=NOW - timedelta(days=1)),
            hostile_entry("a version past SQLite's integer", published=NOW - timedelta(hours=2)),
            RawEntry(entry_xml(future)),  # served whatever range is asked for
        ]
        async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:

            async def polling() -> str:
                return fields_of(
                    await (await invoke(discord, guild, papers, admin, "status")).wait_response()
                )["arXiv polling"]

            assert (await bot.ctx.ingestor().poll_once()).complete
            healthy = await polling()
            assert "⚠️" not in healthy
            assert "🚫 2 unusable entries skipped; latest" in healthy
            # Both were first seen by the same poll; the latest shown is the first by id.
            assert f"`{future.versioned_id}: submitted 2099-01-01 00:00 UTC, outside the window" in healthy

            # A redirect loop escaped the poll before, and /status showed nothing wrong.
            arxiv.redirect_next(count=500)
            clock.advance(1800)
            assert not (await bot.ctx.ingestor().poll_once()).complete
            troubled = await polling()
            assert "⚠️ 1 failed poll" in troubled and "redirect loop" in troubled
            assert "🚫 2 unusable entries skipped" in troubled  # the same two entries, counted once

            arxiv.clear_faults()
            clock.advance(1800)
            assert (await bot.ctx.ingestor().poll_once()).complete
            recovered = await polling()
            assert "⚠️" not in recovered and "🚫 2 unusable entries skipped" in recovered

            # A backfill's skipped entries show too, under its own name.
            await bot.ctx.backfill(("cs.LG",)).run(1)
            assert "`backfill:cs.LG`: 🚫 2 unusable entries skipped" in await polling()
        assert discord.violations == []


async def test_a_poll_error_quoting_hostile_text_shows_no_link_and_pings_nobody(tmp_path: Path) -> None:
    # arXiv's error entry is quoted in the recorded poll error; whoever answers as arXiv (or sits between)
    # writes it. discord.utils.escape_markdown escaped only the first "[" of a line: the second masked link
    # stayed live in /status, its text lying about where it leads.
    hostile = "bad [query](https://arxiv.org/help) see [the fix](https://evil.example/x) @everyone"
    async with OverwriteDiscord() as discord, LoopbackArxiv() as arxiv:
        guild = discord.add_guild("Lab A")
        papers = discord.add_text_channel(guild, "papers")
        admin = discord.add_member(guild, "admin", permissions=MEMBER | MANAGE_GUILD)
        async with running_paperbot(tmp_path, discord, arxiv, clock=FakeClock(NOW)) as bot:
            arxiv.serve_raw_next(error_feed(hostile))
            assert not (await bot.ctx.ingestor().poll_once()).complete
            response = await (await invoke(discord, guild, papers, admin, "status")).wait_response()
            polling = fields_of(response)["arXiv polling"]
            assert "⚠️ 1 failed poll" in polling and "the fix" in polling
            assert live_links(polling) == []
            assert "@everyone" not in polling
        assert discord.violations == []

"""Whole loops driven by slash commands through the real client: follow, poll, post; a gateway drop in the
middle; hostile paper text."""

from __future__ import annotations

from pathlib import Path

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import ALL_PERMISSIONS
from bot.loopback.harness import running_paperbot
from tests.e2e.helpers import OTHER_TITLES, RL_TITLES, announced, embed_urls, first_poll
from tests.fakes.checked_discord import FakeDiscord


async def test_follow_then_a_poll_posts_the_five_matches_once(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        older = announced(clock, ["GRPO for theorem proving, an early study"], start=500)
        arxiv.papers = older
        await bot.ctx.ingestor().poll_once()  # history before the follow: shown in the preview, never posted
        follow = await discord.invoke(
            guild, channel, admin, "follow", [{"name": "topic", "value": "RL Post-Training"}]
        )
        await follow.wait_original(lambda m: "RL Post-Training" in (m.get("content") or ""))
        preview = follow.original["content"]
        assert "GRPO for theorem proving" in preview and "papers in the last four weeks" in preview

        clock.advance(3600)
        rl = announced(clock, RL_TITLES)
        arxiv.papers += rl + announced(clock, OTHER_TITLES, start=100)
        report = await bot.ctx.ingestor().poll_once()
        assert len(report.new) == 25
        await bot.worker.deliver_once()
        await bot.worker.deliver_once()
        assert sorted(embed_urls(discord.messages(channel.id))) == sorted(p.abs_url for p in rl)


async def test_gateway_dropped_mid_run_resumes_and_commands_still_work(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock):
        first = await discord.invoke(guild, channel, admin, "topics")
        await first.wait_response()
        await discord.close_gateway(4000)
        await discord.wait_for(lambda: discord.resume_count >= 1, timeout=20)
        second = await discord.invoke(guild, channel, admin, "status")
        await second.wait_response()
        assert second.responses and discord.identify_count == 1


async def test_hostile_titles_are_posted_safely(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        follow = await discord.invoke(
            guild, channel, admin, "follow", [{"name": "topic", "value": "RL Post-Training"}]
        )
        await follow.wait_original(lambda m: bool(m.get("content")))
        arxiv.papers = announced(
            clock,
            [
                "@everyone GRPO post-training **now** <@123> with $4\\times$ fewer `tokens` and {\\sim}15% gain"
            ],
        )
        await bot.ctx.ingestor().poll_once()
        await bot.worker.deliver_once()
        [message] = discord.messages(channel.id)
        [request] = discord.requests_to("POST", "/channels/{id}/messages")
        assert request.json["allowed_mentions"] == {"parse": []}
        title = message["embeds"][0]["title"]
        assert "@everyone" not in title and "<@123>" not in title
        assert "4×" in title and "~15%" in title


async def test_topics_named_in_other_scripts_each_post_their_own_papers(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    """Two server topics whose names share no ASCII letter: each keeps its query, and each channel gets only
    its own topic's papers (they once shared one slug, and the second overwrote the first)."""
    guild = discord.add_guild("Lab")
    quantum_channel = discord.add_text_channel(guild, "量子")
    learning_channel = discord.add_text_channel(guild, "機械学習")
    admin = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        for channel, name, query in (
            (quantum_channel, "量子", "ti:qubit"),
            (learning_channel, "機械学習", "ti:perceptron"),
        ):
            interaction = await discord.invoke(
                guild,
                channel,
                admin,
                "follow",
                [{"name": "topic", "value": name}, {"name": "query", "value": query}],
            )
            reply = await interaction.wait_original(lambda m: bool(m.get("content")))
            assert f"Created this server's topic **{name}**" in reply["content"]

        clock.advance(3600)
        qubits = announced(clock, ["Qubit routing on sparse hardware"])
        perceptrons = announced(clock, ["Perceptron capacity revisited"], start=10)
        arxiv.papers += qubits + perceptrons + announced(clock, OTHER_TITLES, start=100)
        await bot.ctx.ingestor().poll_once()
        await bot.worker.deliver_once()
        assert embed_urls(discord.messages(quantum_channel.id)) == [p.abs_url for p in qubits]
        assert embed_urls(discord.messages(learning_channel.id)) == [p.abs_url for p in perceptrons]

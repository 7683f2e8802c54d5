"""Polls and posts through the real discord.py client against the loopback Discord and arXiv, with faults."""

from __future__ import annotations

import dataclasses
import re
from datetime import timedelta
from pathlib import Path

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.harness import running_paperbot
from bot.models import Author, Paper
from bot.sources.arxiv_api import parse_feed
from tests.e2e.helpers import (
    OTHER_TITLES,
    RL_TITLES,
    announced,
    embed_urls,
    first_poll,
    follow,
    lab_following,
)
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.fakes.openapi_validator import EMBEDS_TOTAL_MAX, embed_characters, message_limit_violations
from tests.shared_files import FIXTURES

_LABS = [
    "Department of Computer Science, Tsinghua University, Beijing, China",
    "Google DeepMind, London, United Kingdom",
    "Mila - Quebec Artificial Intelligence Institute, Université de Montréal",
    "Max Planck Institute for Intelligent Systems, Tübingen, Germany",
    "Shanghai Artificial Intelligence Laboratory",
    "Paul G. Allen School of Computer Science & Engineering, University of Washington",
]
_NAMES = [
    "Wei Zhang",
    "Maria García-López",
    "Oluwaseun Adeyemi",
    "Hiroshi Tanaka",
    "Anna Kowalska",
    "Rahul Iyer",
]


def real_looking(clock: FakeClock, count: int) -> list[Paper]:
    """Real arXiv entries (recorded abstracts, comments and authors; the longest comments first) with an RL
    post-training title, a long author list with affiliations, and a submission in the last hours."""
    real = parse_feed((FIXTURES / "api_query_testing_100.xml").read_bytes()).papers
    chosen = sorted(real, key=lambda p: -len(p.comment or ""))[:count]
    papers = []
    for i, paper in enumerate(chosen):
        extra = [
            Author(f"{_NAMES[k % len(_NAMES)]} {i}-{k}", (_LABS[k % len(_LABS)], _LABS[(k + 1) % len(_LABS)]))
            for k in range(24)
        ]
        papers.append(
            dataclasses.replace(
                paper,
                title=f"{RL_TITLES[i % len(RL_TITLES)]}: {paper.title}",
                authors=(*paper.authors, *extra),
                primary_category="cs.LG",
                categories=("cs.LG", *paper.categories),
                published=clock.now() - timedelta(hours=1, minutes=i),
                updated=clock.now() - timedelta(hours=1, minutes=i),
            )
        )
    return papers


async def test_poll_posts_exactly_the_matching_papers_once(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    async with lab_following(tmp_path, discord, arxiv, clock) as (bot, _guild, channel):
        rl = announced(clock, RL_TITLES)
        arxiv.papers = rl + announced(clock, OTHER_TITLES, start=100)
        report = await bot.ctx.ingestor().poll_once()
        assert report.complete and len(report.new) == 25
        assert (await bot.worker.deliver_once()).sent == 5
        assert (await bot.worker.deliver_once()).sent == 0
        messages = discord.messages(channel.id)
        assert sorted(embed_urls(messages)) == sorted(p.abs_url for p in rl)
        # each card names the most specific topics it matched at or below the followed one
        assert sorted(m["embeds"][0]["footer"]["text"].split(" • ")[0] for m in messages) == [
            "Matched: Direct Preference Optimization · RL from Human Feedback · Reward Modeling",
            "Matched: Group Relative Policy Optimization · RL with Verifiable Rewards",
            "Matched: RL Post-Training",
            "Matched: RL for Code Generation",
            "Matched: RL with Verifiable Rewards",
        ]
        assert all(m.get("components") for m in messages)  # Abstract / PDF / HTML buttons


async def test_one_post_for_a_parent_and_a_child_followed_names_the_child(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    async with lab_following(tmp_path, discord, arxiv, clock) as (bot, guild, channel):
        await follow(bot, guild.id, channel.id, "Group Relative Policy Optimization")
        arxiv.papers = announced(clock, ["Group Relative Policy Optimization (GRPO) for LLM reasoning"])
        await bot.ctx.ingestor().poll_once()
        await bot.worker.deliver_once()
        [message] = discord.messages(channel.id)
        footer = message["embeds"][0]["footer"]["text"]
        assert "Group Relative Policy Optimization" in footer and "RL Post-Training" not in footer


async def test_rate_limit_storms_and_server_errors_deliver_everything_once(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    async with lab_following(tmp_path, discord, arxiv, clock) as (bot, _guild, channel):
        rl = announced(clock, RL_TITLES)
        arxiv.papers = rl
        await bot.ctx.ingestor().poll_once()
        # Per-route then global 429s that discord.py rides out itself (4 < its 5 tries), then a longer storm.
        discord.fail_next("POST /channels/{id}/messages", 429, count=2)
        discord.fail_next("POST /channels/{id}/messages", 429, count=2, global_=True)
        first = await bot.worker.deliver_once()
        assert first.sent == 5
        arxiv.papers += announced(clock, ["GRPO for agents", "RLVR for theorem proving"], start=50)
        await bot.ctx.ingestor().poll_once()
        discord.fail_next("POST /channels/{id}/messages", 429, count=5)
        second = await bot.worker.deliver_once()
        assert second.sent == 0 and second.retried == 1
        discord.fail_next("POST /channels/{id}/messages", 503, count=1)  # discord.py does not retry a 503
        clock.advance(3600)
        third = await bot.worker.deliver_once()
        assert third.retried == 1
        clock.advance(3600)
        assert (await bot.worker.deliver_once()).sent == 2
        urls = embed_urls(discord.messages(channel.id))
        assert len(urls) == len(set(urls)) == 7


async def test_deleted_channel_marks_its_follow_broken_and_spares_the_others(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    doomed = discord.add_text_channel(guild, "old-papers")
    kept = discord.add_text_channel(guild, "papers")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, doomed.id, "RL Post-Training")
        await follow(bot, guild.id, kept.id, "RL Post-Training")
        discord.delete_channel(doomed)
        arxiv.papers = announced(clock, RL_TITLES)
        await bot.ctx.ingestor().poll_once()
        report = await bot.worker.deliver_once()
        assert report.broken_channels == [doomed.id] and report.sent == 5
        follows = {f.channel_id: f for f in await bot.services.follows.in_server(guild.id)}
        assert follows[doomed.id].broken and not follows[kept.id].broken
        assert len(discord.messages(kept.id)) == 5


async def test_forum_channel_gets_a_post_per_paper(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    forum = discord.add_forum_channel(guild, "paper-forum")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, forum.id, "RL Post-Training")
        rl = announced(clock, RL_TITLES[:3])
        arxiv.papers = rl
        await bot.ctx.ingestor().poll_once()
        assert (await bot.worker.deliver_once()).sent == 3
        threads = discord.threads(forum.id)
        assert sorted(t["name"] for t in threads) == sorted(p.title for p in rl)
        assert sorted(t["message"]["embeds"][0]["url"] for t in threads) == sorted(p.abs_url for p in rl)


async def test_arxiv_down_for_a_while_then_papers_arrive_once(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    async with lab_following(tmp_path, discord, arxiv, clock) as (bot, guild, channel):
        arxiv.papers = announced(clock, RL_TITLES)
        arxiv.fail_next(503, count=12)  # more than one cycle's tries
        down = await bot.ctx.ingestor().poll_once()
        assert not down.complete and "did not answer" in (down.error or "")
        sources = (await bot.services.status.of_server(guild.id)).sources
        [status] = [s for s in sources if s.source == down.source]
        assert status.consecutive_failures == 1
        clock.advance(1800)
        while arxiv.pending_faults():
            await bot.ctx.ingestor().poll_once()
            clock.advance(1800)
        back = await bot.ctx.ingestor().poll_once()
        assert back.complete
        await bot.worker.deliver_once()
        await bot.worker.deliver_once()
        assert sorted(embed_urls(discord.messages(channel.id))) == sorted(p.abs_url for p in arxiv.papers)


async def test_a_fresh_install_posts_no_history_then_posts_what_is_new(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await follow(bot, guild.id, channel.id, "RL Post-Training")
        arxiv.papers = announced(clock, RL_TITLES) + announced(clock, OTHER_TITLES, start=100)
        first = await bot.ctx.ingestor().poll_once()  # five days of papers announced before the bot existed
        assert first.complete and len(first.new) == 25
        assert (await bot.worker.deliver_once()).sent == 0
        topic = await bot.services.topics.find(guild.id, "RL Post-Training")
        assert topic is not None and len(await bot.services.history.latest(topic, 10)) == 5  # matched
        clock.advance(3600)
        fresh = announced(clock, ["RLVR post-training for theorem proving"], start=300)
        arxiv.papers += fresh
        await bot.ctx.ingestor().poll_once()
        assert (await bot.worker.deliver_once()).sent == 1
        assert embed_urls(discord.messages(channel.id)) == [fresh[0].abs_url]


async def test_digest_posts_at_its_hour_within_discords_limits(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "digest")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, channel.id, "RL Post-Training", mode="digest")
        long_abstract = "We post-train language models with GRPO. " * 40
        titles = [f"{t} ({i})" for i in range(3) for t in RL_TITLES][:12]
        arxiv.papers = [
            make_paper(i, title=t, abstract=long_abstract, published=clock.now() - timedelta(hours=1 + i))
            for i, t in enumerate(titles)
        ]
        await bot.ctx.ingestor().poll_once()
        assert (await bot.worker.deliver_once()).sent == 0  # digests wait for their hour
        report = await bot.worker.deliver_digests(hour=8)
        assert report.sent == 12
        messages = discord.messages(channel.id)
        assert [len(m["embeds"]) for m in messages] == [10, 2]
        # the cards (and so the header) name the most specific topics below the followed one
        assert messages[0]["content"] == (
            "**10 new papers** for Direct Preference Optimization · Group Relative Policy Optimization · "
            "RL for Code Generation · RL from Human Feedback · RL with Verifiable Rewards · Reward Modeling"
        )
        assert sorted(embed_urls(messages)) == sorted(p.abs_url for p in arxiv.papers)


async def test_a_digest_of_ten_real_looking_papers_fits_in_one_message_and_loses_none(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "digest")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, channel.id, "RL Post-Training", mode="digest")
        arxiv.papers = real_looking(clock, 10)
        await bot.ctx.ingestor().poll_once()
        report = await bot.worker.deliver_digests(hour=8)
        assert (report.sent, report.failed) == (10, 0)
        [message] = discord.messages(channel.id)
        assert message_limit_violations(message) == []
        assert sum(embed_characters(e) for e in message["embeds"]) <= EMBEDS_TOTAL_MAX
        assert sorted(embed_urls([message])) == sorted(p.abs_url for p in arxiv.papers)
        # Shrunk, not emptied: every card keeps its authors, a meta line and the start of its abstract.
        for embed in message["embeds"]:
            assert re.search(r", .+ \+\d\d$", embed["author"]["name"])
            assert "\n\n" in embed["description"]


async def test_a_digest_discord_rejects_is_posted_again_in_halves(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "digest")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, guild.id, channel.id, "RL Post-Training", mode="digest")
        arxiv.papers = real_looking(clock, 10)
        await bot.ctx.ingestor().poll_once()
        discord.fail_next("POST /channels/{id}/messages", 400)  # as Discord answers a message over its limits
        report = await bot.worker.deliver_digests(hour=8)
        assert (report.sent, report.failed) == (10, 0)
        messages = discord.messages(channel.id)
        assert [len(m["embeds"]) for m in messages] == [5, 5]
        # Each half says how many papers it holds; the topics named are the most specific the papers matched.
        assert [m["content"].split(" for ")[0] for m in messages] == ["**5 new papers**"] * 2
        assert sorted(embed_urls(messages)) == sorted(p.abs_url for p in arxiv.papers)
        assert (await bot.services.status.of_server(guild.id)).deliveries == {"sent": 10}

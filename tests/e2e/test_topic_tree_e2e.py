"""The topic tree through the running bot: a paper of a sub-topic reaches the parent's channel once, named by the
sub-topic; the parent's /momentum, /latest and /search count it; /topics shows the tree; a server's own topic
placed under a catalog topic counts for it in that server only; a bad parent is refused privately."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import ALL_PERMISSIONS, EPHEMERAL, LOADING, Interaction
from bot.loopback.harness import running_paperbot
from bot.models import Paper
from tests.e2e.helpers import embed_urls, first_poll, follow
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord

RL = "RL Post-Training"
OPD = "On-Policy Distillation"


def distillation_paper(n: int, published_hours_ago: float, clock: FakeClock) -> Paper:
    """A paper of On-Policy Distillation that RL Post-Training's own query does not match (it never says
    "reinforcement learning", "reward" or "RL"): only the tree brings it to the parent."""
    return make_paper(
        n,
        title=f"On-policy distillation of a small student from its own samples, study {n}",
        abstract="We train the student on sequences it generated, with token-level feedback from a teacher, "
        "closing the gap between training and inference.",
        published=clock.now() - timedelta(hours=published_hours_ago),
    )


def grpo_paper(n: int, published_hours_ago: float, clock: FakeClock) -> Paper:
    return make_paper(
        n,
        title=f"GRPO post-training of language models for math, study {n}",
        abstract="We post-train an LLM with GRPO on verifiable rewards.",
        published=clock.now() - timedelta(hours=published_hours_ago),
    )


def okapi_paper(n: int, published_hours_ago: float, clock: FakeClock) -> Paper:
    return make_paper(
        n,
        title=f"Okapi gait recognition, study {n}",
        abstract="We recognise okapi gaits in camera-trap videos.",
        published=clock.now() - timedelta(hours=published_hours_ago),
    )


def options(**given: Any) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in given.items()]


async def settled(interaction: Interaction) -> dict[str, Any]:
    """The message the user sees once the bot has answered (a deferred one filled by its follow-up)."""
    return await interaction.wait_original(lambda m: not m["flags"] & LOADING)


async def private_text(interaction: Interaction) -> str:
    response = await interaction.wait_response()
    assert response["type"] == 4 and response["data"]["flags"] & EPHEMERAL, response
    return response["data"].get("content") or ""


def footers(messages: list[dict[str, Any]]) -> list[str]:
    return [e["footer"]["text"] for m in messages for e in m.get("embeds") or []]


async def test_a_paper_of_a_sub_topic_reaches_the_parents_channel_once_named_by_the_sub_topic(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    history = [distillation_paper(1, 60, clock), distillation_paper(2, 80, clock), grpo_paper(3, 70, clock)]
    arxiv.papers = list(history)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)  # the history: matched, never posted
        followed = await discord.invoke(guild, channel, admin, "follow", options(topic=RL))
        preview = (await settled(followed))["content"]
        assert "now follows **RL Post-Training**" in preview and "study 1" in preview

        clock.advance(3600)
        fresh = distillation_paper(4, 0.5, clock)
        arxiv.papers.append(fresh)
        report = await bot.ctx.ingestor().poll_once()
        assert report.new == [fresh.arxiv_id]
        await bot.worker.deliver_once()
        await bot.worker.deliver_once()
        messages = discord.messages(channel.id)
        assert embed_urls(messages) == [fresh.abs_url]  # posted, once
        assert footers(messages) == [f"Matched: {OPD} • arXiv:{fresh.versioned_id}"]

        # /momentum of the parent counts the sub-topic's papers of the window (the new one is today's)
        momentum = await settled(await discord.invoke(guild, channel, admin, "momentum", options(topic=RL)))
        [embed] = momentum["embeds"]
        assert embed["description"].startswith("3 papers in the last four weeks"), embed["description"]

        latest = await settled(await discord.invoke(guild, channel, admin, "latest", options(topic=RL)))
        assert all(f"study {n}" in latest["content"] for n in (1, 2, 3, 4))
        search = await settled(
            await discord.invoke(guild, channel, admin, "search", options(query="student", topic=RL))
        )
        assert "3 results" in search["content"]  # the three distillation papers

        # /topics: the follow shown where it sits, then the tree with the followed topic in bold
        topics = await discord.invoke(guild, channel, admin, "topics")
        response = await topics.wait_response()
        [follows, tree] = response["data"]["embeds"]
        assert follows["description"].startswith(f"**{RL}** → <#{channel.id}>")
        lines = tree["description"].split("\n")
        assert f"**{RL}**" in lines and f"\u2003└ {OPD}" in lines
        assert lines.index(f"\u2003└ {OPD}") > lines.index(f"**{RL}**")
        assert "\u2003\u2003└ Process Reward Models" in lines  # a grandchild, under Reward Modeling

        labels = await discord.autocomplete(guild, channel, admin, "latest", options(topic="on-policy"))
        assert labels == [{"name": f"{RL} › {OPD}", "value": OPD}]


@pytest.mark.sqlite_only  # reads the outbox in the SQLite file
async def test_a_channel_following_a_parent_and_its_child_gets_one_post_per_paper(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    digest = discord.add_text_channel(guild, "digest")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        for topic in (RL, OPD):
            await follow(bot, guild.id, channel.id, topic)
            await follow(bot, guild.id, digest.id, topic, mode="digest")
        clock.advance(3600)
        fresh = distillation_paper(10, 0.5, clock)
        arxiv.papers = [fresh]
        await bot.ctx.ingestor().poll_once()
        await bot.worker.deliver_once()
        await bot.worker.deliver_once()
        await bot.worker.deliver_digests(8)

        # one outbox row per (channel, paper), standing for both followed topics
        db = tmp_path / "paperwatch.sqlite3"
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT d.channel_id, COUNT(DISTINCT d.id), COUNT(dt.topic_id) FROM deliveries d"
                " JOIN delivery_topics dt ON dt.delivery_id = d.id GROUP BY d.channel_id ORDER BY d.channel_id"
            ).fetchall()
        assert rows == sorted([(channel.id, 1, 2), (digest.id, 1, 2)])
        [card] = discord.messages(channel.id)
        assert footers([card]) == [f"Matched: {OPD} • arXiv:{fresh.versioned_id}"]
        [collected] = discord.messages(digest.id)
        assert collected["content"] == f"**1 new paper** for {OPD}"
        assert footers([collected]) == [f"Matched: {OPD} • arXiv:{fresh.versioned_id}"]


async def test_a_servers_own_topic_under_a_catalog_topic_counts_for_it_in_that_server_only(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    lab = discord.add_guild("Lab")
    lab_rl = discord.add_text_channel(lab, "rl")
    lab_okapi = discord.add_text_channel(lab, "okapi")
    admin = discord.add_member(lab, "ada", permissions=ALL_PERMISSIONS)
    other = discord.add_guild("Other Lab")
    other_rl = discord.add_text_channel(other, "rl")
    other_admin = discord.add_member(other, "bo", permissions=ALL_PERMISSIONS)
    arxiv.papers = [okapi_paper(20, 50, clock), grpo_paper(21, 55, clock)]
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        await first_poll(bot)
        await follow(bot, lab.id, lab_rl.id, RL)
        await follow(bot, other.id, other_rl.id, RL)
        created = await settled(
            await discord.invoke(
                lab,
                lab_okapi,
                admin,
                "follow",
                options(topic="Okapi Studies", query="ti:okapi", parent=RL),
            )
        )
        assert (
            "Created this server's topic **Okapi Studies** under **RL Post-Training**" in created["content"]
        )
        assert "count for **RL Post-Training** too in this server only" in created["content"]

        async def momentum_of_rl(guild: Any, channel: Any, member: Any) -> str:
            answer = await settled(
                await discord.invoke(guild, channel, member, "momentum", options(topic=RL))
            )
            return answer["embeds"][0]["description"]

        assert (await momentum_of_rl(lab, lab_rl, admin)).startswith("2 papers in the last four weeks")
        assert (await momentum_of_rl(other, other_rl, other_admin)).startswith(
            "1 paper in the last four weeks"
        )
        here = await settled(await discord.invoke(lab, lab_rl, admin, "latest", options(topic=RL)))
        there = await settled(await discord.invoke(other, other_rl, other_admin, "latest", options(topic=RL)))
        assert "Okapi gait" in here["content"] and "Okapi gait" not in there["content"]

        clock.advance(3600)
        fresh = okapi_paper(22, 0.5, clock)
        arxiv.papers.append(fresh)
        await bot.ctx.ingestor().poll_once()
        await bot.worker.deliver_once()
        assert embed_urls(discord.messages(lab_rl.id)) == [fresh.abs_url]
        assert embed_urls(discord.messages(lab_okapi.id)) == [fresh.abs_url]
        assert discord.messages(other_rl.id) == []  # another server's follow of the catalog topic: unchanged
        assert footers(discord.messages(lab_rl.id)) == [
            f"Matched: Okapi Studies • arXiv:{fresh.versioned_id}"
        ]

        autocomplete = await discord.autocomplete(lab, lab_rl, admin, "latest", options(topic="okapi"))
        assert autocomplete == [{"name": f"{RL} › Okapi Studies", "value": "Okapi Studies"}]
        response = await (await discord.invoke(lab, lab_rl, admin, "topics")).wait_response()
        tree = response["data"]["embeds"][1]["description"].split("\n")
        assert "\u2003└ **Okapi Studies** · this server's" in tree  # followed in #okapi, under RL
        response = await (await discord.invoke(other, other_rl, other_admin, "topics")).wait_response()
        assert "Okapi" not in response["data"]["embeds"][1]["description"]


async def test_a_bad_parent_is_refused_privately_and_changes_nothing(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    admin = discord.add_member(guild, "ada", permissions=ALL_PERMISSIONS)
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:

        async def refused(**given: Any) -> str:
            return await private_text(await discord.invoke(guild, channel, admin, "follow", options(**given)))

        unknown = await refused(topic="Okapi", query="ti:okapi", parent="No Such Parent")
        assert "no topic named “No Such Parent” to put “Okapi” under" in unknown
        itself = await refused(topic="Okapi", query="ti:okapi", parent="okapi")
        assert "“Okapi” cannot be its own parent" in itself
        catalog = await refused(topic=OPD, parent="Knowledge Distillation")
        assert "catalog topic" in catalog and "place in the tree is the catalog's" in catalog
        assert await bot.services.topics.find(guild.id, "Okapi") is None

        # a loop: Okapi under Zebra, then Zebra under Okapi
        for topic, query, parent in (("Zebra", "ti:zebra", RL), ("Okapi", "ti:okapi", "Zebra")):
            await settled(
                await discord.invoke(
                    guild, channel, admin, "follow", options(topic=topic, query=query, parent=parent)
                )
            )
        loop = await refused(topic="Zebra", parent="Okapi")
        assert "“Okapi” sits under “Zebra”, so “Zebra” cannot go under it" in loop
        zebra = await bot.services.topics.find(guild.id, "Zebra")
        rl = await bot.services.topics.find(guild.id, RL)
        assert zebra is not None and rl is not None and zebra.parent_id == rl.id

        # parent:none puts a topic back at the top
        moved = await settled(
            await discord.invoke(guild, channel, admin, "follow", options(topic="Okapi", parent="none"))
        )
        assert "Put **Okapi** at the top of the tree" in moved["content"]
        okapi = await bot.services.topics.find(guild.id, "Okapi")
        assert okapi is not None and okapi.parent_id is None

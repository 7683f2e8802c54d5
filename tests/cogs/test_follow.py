"""/follow, /unfollow and /topics through the real client against the loopback Discord."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.app import PaperBot
from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import ALL_PERMISSIONS, EPHEMERAL, MANAGE_GUILD, Channel, Guild, Interaction, Member
from bot.loopback.discord.records import EMBED_LINKS, SEND_MESSAGES_IN_THREADS
from bot.loopback.harness import running_paperbot
from bot.models import Follow, Paper, TopicRow
from bot.render import fit_lines, paper_compact_line
from bot.topics.catalog import CATALOG_QUERY_LENGTH, CatalogTopic
from bot.topics.index import TopicIndex
from bot.topics.query import MAX_QUERY_LENGTH, parse_query
from cogs.follow import follow_message
from tests.cogs.world import (
    MANAGE_CHANNELS,
    MEMBER,
    RL,
    OverwriteDiscord,
    ephemeral_reply,
    invoke,
    public_reply,
    store_as_polled,
)
from tests.factories import BASE_TIME, make_paper, plain_paper, rl_paper
from tests.peek import store_of

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@dataclass
class World:
    guild: Guild
    papers: Channel
    other: Channel
    forum: Channel
    admin: Member
    member: Member
    moderator: Member  # Manage Channels on #papers only
    guild_b: Guild
    b_papers: Channel
    b_admin: Member


def build_world(discord: OverwriteDiscord) -> World:
    guild = discord.add_guild("Lab A")
    papers = discord.add_text_channel(guild, "papers")
    other = discord.add_text_channel(guild, "other")
    forum = discord.add_forum_channel(guild, "paper-forum")
    moderator = discord.add_member(guild, "moderator", permissions=MEMBER)
    discord.allow(papers, moderator, MANAGE_CHANNELS)
    guild_b = discord.add_guild("Lab B")
    return World(
        guild=guild,
        papers=papers,
        other=other,
        forum=forum,
        admin=discord.add_member(guild, "admin", permissions=MEMBER | MANAGE_GUILD),
        member=discord.add_member(guild, "member", permissions=MEMBER),
        moderator=moderator,
        guild_b=guild_b,
        b_papers=discord.add_text_channel(guild_b, "papers"),
        b_admin=discord.add_member(guild_b, "admin-b", permissions=MEMBER | MANAGE_GUILD),
    )


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[OverwriteDiscord, LoopbackArxiv]]:
    async with OverwriteDiscord() as discord, LoopbackArxiv() as arxiv:
        yield discord, arxiv


@pytest.fixture
async def running(
    tmp_path: Path, fakes: tuple[OverwriteDiscord, LoopbackArxiv]
) -> AsyncIterator[tuple[PaperBot, OverwriteDiscord, World]]:
    discord, arxiv = fakes
    world = build_world(discord)
    async with running_paperbot(tmp_path, discord, arxiv, clock=FakeClock(NOW)) as bot:
        yield bot, discord, world
    assert discord.violations == []


# ---------------------------------------------------------------------------------------------------------
# /follow


async def test_follow_catalog_topic_previews_then_posts_only_new_matches(running: Any) -> None:
    bot, discord, w = running
    history = [rl_paper(n) for n in (1, 2, 3, 4)]  # rl_paper(1) is the newest
    await store_as_polled(bot, [*history, plain_paper(5)])

    content = await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL))

    topic = await bot.services.topics.find(w.guild.id, RL)
    assert topic is not None and topic.is_catalog
    assert f"<#{w.papers.id}> now follows **RL Post" in content
    assert "```\n" + topic.query.strip() + "\n```" in content
    assert (await bot.services.momentum.topic(topic)).sentence() in content
    assert [paper_compact_line(p) in content for p in history] == [True, True, True, False]
    assert "from now on" in content and "one post per paper" in content
    [follow] = await bot.services.follows.in_server(w.guild.id)
    assert (follow.channel_id, follow.topic_id, follow.mode, follow.digest_hour) == (
        w.papers.id,
        topic.id,
        "each",
        8,
    )

    later = BASE_TIME + timedelta(days=2)
    fresh = [rl_paper(101, published=later), rl_paper(102, published=later)]
    await store_as_polled(bot, [*fresh, plain_paper(103, published=later)])
    report = await bot.worker.deliver_once()
    again = await bot.worker.deliver_once()

    posted = discord.messages(w.papers.id)
    assert (report.sent, again.sent) == (2, 0)
    assert sorted(m["embeds"][0]["url"] for m in posted) == sorted(p.abs_url for p in fresh)
    # the cards name the most specific topics matched below the followed one, not the followed one itself
    footers = [m["embeds"][0]["footer"]["text"] for m in posted]
    assert all("Group Relative Policy Optimization" in f and RL not in f for f in footers), footers


async def test_follow_with_a_new_query_creates_and_later_changes_this_servers_topic(running: Any) -> None:
    bot, discord, w = running
    sparse = [plain_paper(n, f"Sparse attention for long documents {n}") for n in (1, 2)]
    linear = plain_paper(3, "Linear attention at scale")
    await store_as_polled(bot, [*sparse, linear, plain_paper(4)])

    created = await public_reply(
        await invoke(
            discord,
            w.guild,
            w.papers,
            w.admin,
            "follow",
            topic="Sparse Attention",
            query='ti:"sparse attention"',
        )
    )
    topic = await bot.services.topics.find(w.guild.id, "Sparse Attention")
    assert topic is not None and topic.guild_id == w.guild.id
    assert await bot.services.topics.find(w.guild_b.id, "Sparse Attention") is None
    assert "Created this server's topic" in created and "2 stored papers match" in created
    assert all(paper_compact_line(p) in created for p in sparse)
    assert paper_compact_line(linear) not in created

    here = await discord.autocomplete(
        w.guild, w.papers, w.admin, "follow", [{"name": "topic", "value": "spar"}]
    )
    there = await discord.autocomplete(
        w.guild_b, w.b_papers, w.b_admin, "follow", [{"name": "topic", "value": "spar"}]
    )
    everything = await discord.autocomplete(
        w.guild, w.papers, w.admin, "follow", [{"name": "topic", "value": ""}]
    )
    assert "Sparse Attention" in [c["name"] for c in here]
    assert "Sparse Attention" not in [c["name"] for c in there]
    assert len(everything) == 25  # the catalog alone has more: Discord's limit holds

    changed = await public_reply(
        await invoke(
            discord,
            w.guild,
            w.papers,
            w.admin,
            "follow",
            topic="Sparse Attention",
            query='ti:"sparse attention" OR ti:"linear attention"',
            mode="digest",
            digest_hour=6,
        )
    )
    assert "Changed the query" in changed and "3 stored papers match" in changed
    assert "already followed" in changed and "daily digest at 06:00 UTC" in changed
    assert paper_compact_line(linear) in changed
    [follow] = await bot.services.follows.in_server(w.guild.id)
    assert (follow.mode, follow.digest_hour) == ("digest", 6)


async def test_mistakes_get_private_answers_and_change_nothing(running: Any) -> None:
    bot, discord, w = running

    async def follow_error(**options: Any) -> str:
        return await ephemeral_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", **options))

    malformed = await follow_error(topic="Broken", query="ti:(sparse attention")
    assert "does not parse" in malformed and "position" in malformed and "^" in malformed
    unknown = await follow_error(topic="No Such Topic")
    assert "no topic named" in unknown and "/follow topic:" in unknown
    overlong = await follow_error(topic="Long", query="attention " * 60)
    assert "at most 500 characters" in overlong
    catalog = await follow_error(topic=RL, query="ti:anything")
    assert "catalog topic" in catalog
    hour = await follow_error(topic=RL, mode="digest", digest_hour=24)
    assert "0 to 23" in hour

    assert await bot.services.follows.in_server(w.guild.id) == []
    assert await bot.services.topics.find(w.guild.id, "Broken") is None


async def test_follow_needs_manage_permissions_and_a_channel_the_bot_can_post_in(running: Any) -> None:
    bot, discord, w = running

    refused = await ephemeral_reply(await invoke(discord, w.guild, w.papers, w.member, "follow", topic=RL))
    assert "Manage Server" in refused and "Manage Channels" in refused

    allowed = await public_reply(await invoke(discord, w.guild, w.papers, w.moderator, "follow", topic=RL))
    assert "now follows" in allowed
    elsewhere = await ephemeral_reply(
        await invoke(discord, w.guild, w.papers, w.moderator, "follow", topic=RL, channel=w.other)
    )
    assert "Manage Channels" in elsewhere and f"<#{w.other.id}>" in elsewhere

    discord.set_bot_permissions(w.other, ALL_PERMISSIONS & ~EMBED_LINKS)
    discord.set_bot_permissions(w.forum, ALL_PERMISSIONS & ~SEND_MESSAGES_IN_THREADS)
    no_embeds = await ephemeral_reply(
        await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, channel=w.other)
    )
    assert "Embed Links permission" in no_embeds and f"<#{w.other.id}>" in no_embeds
    no_posts = await ephemeral_reply(
        await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, channel=w.forum)
    )
    assert "Send Messages in Posts" in no_posts

    follows = await bot.services.follows.in_server(w.guild.id)
    assert [f.channel_id for f in follows] == [w.papers.id]


async def test_follow_a_forum_posts_each_paper_as_a_thread(running: Any) -> None:
    bot, discord, w = running
    await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, channel=w.forum))
    await store_as_polled(bot, [rl_paper(1, published=NOW - timedelta(hours=1))])
    report = await bot.worker.deliver_once()
    assert report.sent == 1
    [thread] = discord.threads(w.forum.id)
    assert thread["name"].startswith("GRPO for reasoning")


async def test_follow_records_the_channels_kind_for_deliver_processes_without_a_gateway(running: Any) -> None:
    bot, discord, w = running
    await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL))
    await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, channel=w.forum))
    follows = store_of(bot).follows
    # Discord's channel types: a deliver process posts to a text channel by id, without fetching it first.
    assert (await follows.channel_type(w.papers.id), await follows.channel_type(w.forum.id)) == (0, 15)
    assert await follows.channel_type(w.other.id) is None  # not followed: not known


async def test_names_in_any_script_stay_distinct_and_a_clash_names_the_existing_topic(running: Any) -> None:
    bot, discord, w = running

    async def follow(member: Member, topic: str, query: str, channel: Channel) -> Interaction:
        return await invoke(
            discord, w.guild, w.papers, member, "follow", topic=topic, query=query, channel=channel
        )

    quantum = await public_reply(await follow(w.admin, "量子", "ti:quantum", w.papers))
    learning = await public_reply(await follow(w.admin, "機械学習", "ti:learning", w.other))
    assert (
        "Created this server's topic **量子**" in quantum
        and "Created this server's topic **機械学習**" in learning
    )
    topics = bot.services.topics
    first, second = await topics.find(w.guild.id, "量子"), await topics.find(w.guild.id, "機械学習")
    assert first is not None and second is not None and first.id != second.id
    assert (first.query, second.query) == ("ti:quantum", "ti:learning")
    follows = {(f.topic_name, f.channel_id) for f in await bot.services.follows.in_server(w.guild.id)}
    assert follows == {("量子", w.papers.id), ("機械学習", w.other.id)}

    await public_reply(await follow(w.admin, "Graph Theory", "ti:graph", w.papers))
    clash = await ephemeral_reply(await follow(w.admin, "graph-theory!", "ti:theorem", w.other))
    assert "already has the topic “Graph Theory”" in clash and "Created" not in clash
    graph = await topics.find(w.guild.id, "Graph Theory")
    assert graph is not None and (graph.name, graph.query) == ("Graph Theory", "ti:graph")
    assert len(await bot.services.follows.in_server(w.guild.id)) == 3  # nothing followed on the refusal


async def test_changing_a_topic_other_channels_follow_needs_manage_server(running: Any) -> None:
    bot, discord, w = running
    for channel in (w.papers, w.other):
        await public_reply(
            await invoke(
                discord,
                w.guild,
                w.papers,
                w.admin,
                "follow",
                topic="Sparse",
                query="ti:sparse",
                channel=channel,
            )
        )

    refused = await ephemeral_reply(
        await invoke(discord, w.guild, w.papers, w.moderator, "follow", topic="Sparse", query="ti:dense")
    )
    assert "Manage Server" in refused and f"<#{w.other.id}>" in refused
    topic = await bot.services.topics.find(w.guild.id, "Sparse")
    assert topic is not None and topic.query == "ti:sparse"
    # re-following with the same query changes nothing else, so it stays the moderator's to do
    same = await public_reply(
        await invoke(discord, w.guild, w.papers, w.moderator, "follow", topic="Sparse", query="ti:sparse")
    )
    assert "already followed" in same

    await (
        await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic="Sparse", channel=w.other)
    ).wait_response()
    changed = await public_reply(
        await invoke(discord, w.guild, w.papers, w.moderator, "follow", topic="Sparse", query="ti:dense")
    )
    assert "Changed the query of **Sparse**" in changed  # every follower is in a channel they manage
    topic = await bot.services.topics.find(w.guild.id, "Sparse")
    assert topic is not None and topic.query == "ti:dense"


def crowd(n: int) -> list[Paper]:
    words = ["kalman", "karma", "lorentz", "logic"]
    return [plain_paper(5000 + i, f"{words[i % 4]} common things {i}") for i in range(n)]


async def test_queries_that_would_scan_the_whole_history_are_refused_with_how_to_narrow(running: Any) -> None:
    bot, discord, w = running
    await store_as_polled(bot, crowd(1200))

    async def refusal(query: str) -> str:
        return await ephemeral_reply(
            await invoke(discord, w.guild, w.papers, w.admin, "follow", topic="Everything", query=query)
        )

    for query in ("a*", "au:k", "cat:cs.*", "id:2611*"):
        text = await refusal(query)
        assert "no word the search index can use" in text and "AND" in text, query
    broad = await refusal("ka* OR lo*")
    assert "too broad" in broad and "1,200 stored papers" in broad and "at least 4 letters" in broad
    assert await bot.services.topics.own(w.guild.id) == []
    assert await bot.services.follows.in_server(w.guild.id) == []
    fine = await public_reply(
        await invoke(discord, w.guild, w.papers, w.admin, "follow", topic="Kalman", query="ti:kalman")
    )
    assert "300 stored papers match" in fine


async def test_a_server_may_change_ten_queries_an_hour_and_keep_fifty_topics(running: Any) -> None:
    bot, discord, w = running
    clock = bot.ctx.clock

    async def follow(topic: str, query: str) -> Interaction:
        return await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=topic, query=query)

    for n in range(10):
        await public_reply(await follow(f"Topic {n}", f"ti:word{n}"))
    slow_down = await ephemeral_reply(await follow("Topic 10", "ti:word10"))
    assert "10 topic queries in the last hour" in slow_down and "Try again in 60 minutes" in slow_down
    clock.advance(3600)
    for n in range(10, 50):
        clock.advance(360)
        await bot.services.topics.save_custom(w.guild.id, f"Topic {n}", f"ti:word{n}")
    clock.advance(3600)
    full = await ephemeral_reply(await follow("Topic 50", "ti:word50"))
    assert "50 topics of its own" in full and "/unfollow" in full

    # Topic 49 is followed nowhere: /unfollow deletes it, which makes room
    deleted = await (
        await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic="Topic 49")
    ).wait_response()
    assert "Deleted this server's topic **Topic 49**" in deleted["data"]["content"]
    assert await bot.services.topics.find(w.guild.id, "Topic 49") is None
    assert "now follows **Topic 50**" in await public_reply(await follow("Topic 50", "ti:word50"))
    assert len(await bot.services.topics.own(w.guild.id)) == 50


async def test_unfollowing_the_last_channel_keeps_the_topic_and_only_a_manager_deletes_it(
    running: Any,
) -> None:
    bot, discord, w = running
    await public_reply(
        await invoke(discord, w.guild, w.papers, w.moderator, "follow", topic="Sparse", query="ti:sparse")
    )
    last = await (
        await invoke(discord, w.guild, w.papers, w.moderator, "unfollow", topic="Sparse")
    ).wait_response()
    assert "stays this server's topic" in last["data"]["content"]
    refused = await ephemeral_reply(
        await invoke(discord, w.guild, w.papers, w.moderator, "unfollow", topic="Sparse")
    )
    assert "Manage Server" in refused
    assert await bot.services.topics.find(w.guild.id, "Sparse") is not None
    catalog = await ephemeral_reply(await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic=RL))
    assert "not followed in this server" in catalog  # the catalog's topics are never deleted


async def test_a_servers_topic_wins_over_a_catalog_topic_of_the_same_name(running: Any) -> None:
    bot, discord, w = running
    widget, quantum = plain_paper(1, "Widget assembly lines"), plain_paper(2, "Quantum sensing")
    await store_as_polled(bot, [widget, quantum])
    await public_reply(
        await invoke(
            discord, w.guild, w.papers, w.admin, "follow", topic="Quantum Widgets", query="ti:widget"
        )
    )
    # The next release's catalog brings a topic of the same name (a restart stores it like this).
    twin = CatalogTopic("quantum-widgets", "Quantum Widgets", "Catalog twin.", parse_query("ti:quantum"))
    await TopicIndex(store_of(bot), bot.ctx.clock).start([twin])

    latest = await public_reply(
        await invoke(discord, w.guild, w.papers, w.admin, "latest", topic="Quantum Widgets")
    )
    assert widget.arxiv_id in latest and quantum.arxiv_id not in latest
    choices = await discord.autocomplete(
        w.guild, w.papers, w.admin, "latest", [{"name": "topic", "value": "quantum"}]
    )
    assert [c["name"] for c in choices] == ["Quantum Widgets"]
    changed = await public_reply(
        await invoke(
            discord,
            w.guild,
            w.papers,
            w.admin,
            "follow",
            topic="Quantum Widgets",
            query="ti:widget OR ti:widgets",
        )
    )
    assert "Changed the query of **Quantum Widgets**" in changed
    gone = await (
        await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic="quantum widgets")
    ).wait_response()
    assert "Unfollowed **Quantum Widgets** in 1 channel" in gone["data"]["content"]
    # in another server the name means the catalog's topic
    elsewhere = await public_reply(
        await invoke(discord, w.guild_b, w.b_papers, w.b_admin, "latest", topic="Quantum Widgets")
    )
    assert quantum.arxiv_id in elsewhere and widget.arxiv_id not in elsewhere


# ---------------------------------------------------------------------------------------------------------
# /unfollow, /topics, and one server never touching another's follows


async def test_servers_see_and_remove_only_their_own_follows(running: Any) -> None:
    bot, discord, w = running
    await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL))

    topics_b = await ephemeral_reply(await invoke(discord, w.guild_b, w.b_papers, w.b_admin, "topics"))
    assert "follows no topics yet" in topics_b and "/follow" in topics_b
    unfollow_b = await ephemeral_reply(
        await invoke(discord, w.guild_b, w.b_papers, w.b_admin, "unfollow", topic=RL)
    )
    assert "not followed in this server" in unfollow_b
    foreign = await ephemeral_reply(
        await invoke(discord, w.guild_b, w.b_papers, w.b_admin, "follow", topic=RL, channel=w.papers)
    )
    assert "not in this server" in foreign

    assert len(await bot.services.follows.in_server(w.guild.id)) == 1
    assert await bot.services.follows.in_server(w.guild_b.id) == []


async def test_topics_lists_follows_and_unfollow_removes_them(running: Any) -> None:
    bot, discord, w = running
    for options in ({"channel": w.papers}, {"channel": w.other, "mode": "digest", "digest_hour": 6}):
        await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, **options))
    await store_as_polled(bot, [rl_paper(1, published=NOW - timedelta(hours=1))])
    await bot.worker.deliver_once()  # the 'each' follow posts; the digest one waits for 06:00

    response = await (await invoke(discord, w.guild, w.papers, w.member, "topics")).wait_response()
    assert response["data"]["flags"] & EPHEMERAL
    [embed, tree] = response["data"]["embeds"]
    papers_line, other_line = embed["description"].split("\n")  # sorted by channel id, papers first
    # the tree of topics follows: the followed one in bold, its children indented below it
    lines = tree["description"].split("\n")
    rl_at = lines.index(f"**{RL}**")
    assert lines[rl_at + 1] == "\u2003└ Credit Assignment in RL"  # children by name
    assert "\u2003\u2003└ Process Reward Models" in lines
    assert f"<#{w.papers.id}>" in papers_line and "each paper" in papers_line and "<t:" in papers_line
    assert (
        f"<#{w.other.id}>" in other_line and "digest 06:00 UTC" in other_line and "no posts yet" in other_line
    )

    refused = await ephemeral_reply(await invoke(discord, w.guild, w.papers, w.member, "unfollow", topic=RL))
    assert "Manage Server" in refused
    one = await (
        await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic=RL, channel=w.other)
    ).wait_response()
    assert "in 1 channel" in one["data"]["content"] and not one["data"].get("flags", 0) & EPHEMERAL
    rest = await (await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic=RL)).wait_response()
    assert "in 1 channel" in rest["data"]["content"] and f"<#{w.papers.id}>" in rest["data"]["content"]
    gone = await ephemeral_reply(await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic=RL))
    assert "not followed" in gone
    unknown = await ephemeral_reply(
        await invoke(discord, w.guild, w.papers, w.admin, "unfollow", topic="Nope")
    )
    assert "no topic named" in unknown
    assert await bot.services.follows.in_server(w.guild.id) == []


async def test_topics_fits_discord_limits_with_many_follows(running: Any) -> None:
    bot, discord, w = running
    for n in range(60):  # more than the 50 own topics a server may create: some could be catalog topics
        name = f"{n:02d} " + "very long topic name " * 4
        topic = await store_of(bot).topics.create(
            guild_id=w.guild.id, name=name[:80], description="", query=f"ti:word{n}", at=NOW
        )
        await store_of(bot).follows.upsert(
            guild_id=w.guild.id,
            channel_id=w.papers.id,
            topic_id=topic.id,
            mode="each",
            digest_hour=8,
            created_by=None,
            at=NOW,
        )
    response = await (await invoke(discord, w.guild, w.papers, w.admin, "topics")).wait_response()
    [embed, tree] = response["data"]["embeds"]
    assert len(embed["description"]) <= 4096
    assert embed["description"].endswith("more") and "60 follows" in embed["footer"]["text"]
    # the tree gets what is left of Discord's 6000 characters for a message's embeds
    texts = [e.get(k) or "" for e in (embed, tree) for k in ("title", "description")]
    assert sum(map(len, texts)) + len(embed["footer"]["text"]) + len(tree["footer"]["text"]) <= 6000
    assert tree["description"].endswith("more")
    # violations == [] (checked by the fixture) proves the whole message fits Discord's limits


# ---------------------------------------------------------------------------------------------------------
# The trimming helper on its own


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(st.characters(exclude_characters="\n"), min_size=1, max_size=40), max_size=30),
    st.integers(min_value=12, max_value=300),
)
def test_fit_lines_keeps_whole_lines_and_counts_the_rest(lines: list[str], limit: int) -> None:
    text = fit_lines(lines, limit)
    assert len(text) <= limit
    if len("\n".join(lines)) <= limit:
        assert text == "\n".join(lines)
        return
    *shown, more = text.split("\n")
    assert more == f"+{len(lines) - len(shown)} more"
    assert "\n".join(shown) == "\n".join(lines[: len(shown)])


class _Stub:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)

    def sentence(self) -> str:
        return self.text


@pytest.mark.parametrize("length", [MAX_QUERY_LENGTH, CATALOG_QUERY_LENGTH])  # a server's, the catalog's
def test_follow_message_stays_within_2000_characters_for_the_longest_inputs(length: int) -> None:
    name = "*_@everyone " * 7
    query = "`" * (length // 2) + "x" * (length - length // 2)  # the most a topic query may have
    topic = TopicRow(1, 5, "s", name[:80], "", query)
    follow = Follow(1, 5, 7, 1, name, "digest", 23, NOW, None, None)
    papers = [make_paper(n, title="Long title words " * 40) for n in range(3)]
    text = follow_message(
        topic=topic,
        channel=_Stub(mention="<#7>"),  # type: ignore[arg-type]
        follow=follow,
        is_new=True,
        topic_note="Created this server's topic.",
        momentum=_Stub(text="A momentum sentence. " * 40),  # type: ignore[arg-type]
        latest=papers,
    )
    assert len(text) <= 2000
    body = text.split("```\n", 1)[1].split("\n```", 1)[0]
    assert len(body) == length and "`" not in body  # the whole query, and nothing that closes the block
    assert "@everyone" not in text and text.endswith("Older papers: /latest.")
    assert "A momentum sentence. A momentum sentence." in text  # shortened to the room left, never dropped
    shown = sum(paper_compact_line(p) in text for p in papers)
    assert shown < 3  # fewer papers, never a cut one
    assert shown > 0 or "Its latest matches: /latest." in text  # no room is not "no match"
    assert "No stored paper matches yet." not in text


# ---------------------------------------------------------------------------------------------------------
# parent: a server's own topic in the tree


async def test_putting_a_topic_under_a_parent_others_follow_needs_manage_on_their_channels(
    running: Any,
) -> None:
    bot, discord, w = running
    await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, channel=w.other))

    # the moderator manages #papers only, and #other follows RL Post-Training: what it receives would change
    refused = await ephemeral_reply(
        await invoke(
            discord, w.guild, w.papers, w.moderator, "follow", topic="Okapis", query="ti:okapi", parent=RL
        )
    )
    assert f"<#{w.other.id}>" in refused and "Manage Server" in refused and "parent" in refused
    assert await bot.services.topics.find(w.guild.id, "Okapis") is None
    # at the top, the same topic is theirs to create
    created = await public_reply(
        await invoke(discord, w.guild, w.papers, w.moderator, "follow", topic="Okapis", query="ti:okapi")
    )
    assert "Created this server's topic **Okapis**:" in created
    # and the admin may place it
    placed = await public_reply(
        await invoke(discord, w.guild, w.papers, w.admin, "follow", topic="Okapis", parent=RL)
    )
    assert "Put **Okapis** under **RL Post-Training**" in placed and "in this server only" in placed

    choices = await discord.autocomplete(
        w.guild,
        w.papers,
        w.admin,
        "follow",
        [{"name": "topic", "value": "Okapis"}, {"name": "parent", "value": "rl po"}],
    )
    assert choices[0] == {"name": RL, "value": RL}
    assert {"name": f"{RL} › Okapis", "value": "Okapis"} in choices
    assert all(len(c["name"]) <= 100 for c in choices) and len(choices) <= 25

"""/follow, /unfollow and /topics through the real client against the loopback Discord."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.app import PaperBot
from bot.clock import FakeClock
from bot.models import Paper
from bot.render import paper_compact_line
from bot.store import Follow, TopicRow
from cogs.follow import fit_lines, follow_message
from tests.factories import BASE_TIME, make_paper
from tests.fakes.arxiv_server import FakeArxiv
from tests.fakes.discord_server import (
    ALL_PERMISSIONS,
    EMBED_LINKS,
    EPHEMERAL,
    MANAGE_GUILD,
    SEND_MESSAGES,
    SEND_MESSAGES_IN_THREADS,
    USE_APPLICATION_COMMANDS,
    VIEW_CHANNEL,
    Channel,
    FakeDiscord,
    Guild,
    Interaction,
    Member,
)
from tests.harness import running_paperbot

MANAGE_CHANNELS = 1 << 4
MEMBER = VIEW_CHANNEL | SEND_MESSAGES | USE_APPLICATION_COMMANDS
RL = "RL Post-Training"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


class OverwriteDiscord(FakeDiscord):
    """The fake plus member permission overwrites on a channel (it models only the bot's own), so a member can
    hold Manage Channels on one channel and nowhere else."""

    def __init__(self) -> None:
        super().__init__()
        self.member_allows: dict[int, dict[int, int]] = {}

    def allow(self, channel: Channel, member: Member, permissions: int) -> None:
        self.member_allows.setdefault(channel.id, {})[member.id] = permissions

    def _overwrites(self, channel: Channel) -> list[dict[str, Any]]:
        extra = [
            {"id": str(member_id), "type": 1, "allow": str(bits), "deny": "0"}
            for member_id, bits in self.member_allows.get(channel.id, {}).items()
        ]
        return super()._overwrites(channel) + extra


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
async def fakes() -> AsyncIterator[tuple[OverwriteDiscord, FakeArxiv]]:
    async with OverwriteDiscord() as discord, FakeArxiv() as arxiv:
        yield discord, arxiv


@pytest.fixture
async def running(
    tmp_path: Path, fakes: tuple[OverwriteDiscord, FakeArxiv]
) -> AsyncIterator[tuple[PaperBot, OverwriteDiscord, World]]:
    discord, arxiv = fakes
    world = build_world(discord)
    async with running_paperbot(tmp_path, discord, arxiv, clock=FakeClock(NOW)) as bot:
        yield bot, discord, world
    assert discord.violations == []


# ---------------------------------------------------------------------------------------------------------
# Helpers


def rl_paper(n: int, **fields: Any) -> Paper:
    return make_paper(
        n,
        title=f"GRPO for reasoning language models, part {n}",
        abstract="We fine-tune LLMs with GRPO and verifiable rewards.",
        **fields,
    )


def plain_paper(n: int, title: str | None = None, **fields: Any) -> Paper:
    return make_paper(
        n, title=title or f"Graph colouring heuristics {n}", abstract="We colour graphs.", **fields
    )


async def ingest(bot: PaperBot, papers: Sequence[Paper]) -> None:
    """Store papers exactly like a poll does: matched, and queued for the follows that want them."""
    store = bot.ctx.store
    async with store.transaction():
        result = await store.papers.upsert(papers, seen_at=bot.ctx.clock.now())
        await bot.ctx.on_ingested(result, papers)


async def invoke(
    discord: FakeDiscord, guild: Guild, where: Channel, member: Member, command: str, /, **options: Any
) -> Interaction:
    """Run a command typed in `where`; keyword arguments are its options (including `channel`)."""
    return await discord.invoke(
        guild, where, member, command, [{"name": k, "value": v} for k, v in options.items()]
    )


async def public_reply(interaction: Interaction) -> str:
    """The follow-up that fills a public "thinking" message."""
    response = await interaction.wait_response()
    assert response["type"] == 5 and not (response.get("data") or {}).get("flags", 0) & EPHEMERAL
    [message] = await interaction.wait_followups(1)
    assert not message["flags"] & EPHEMERAL
    return message["content"]


async def ephemeral_reply(interaction: Interaction) -> str:
    """An immediate private answer (errors and lists)."""
    response = await interaction.wait_response()
    assert response["type"] == 4, response
    assert response["data"]["flags"] & EPHEMERAL
    return response["data"].get("content") or ""


# ---------------------------------------------------------------------------------------------------------
# /follow


async def test_follow_catalog_topic_previews_then_posts_only_new_matches(running: Any) -> None:
    bot, discord, w = running
    history = [rl_paper(n) for n in (1, 2, 3, 4)]  # rl_paper(1) is the newest
    await ingest(bot, [*history, plain_paper(5)])

    content = await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL))

    topic = await bot.ctx.store.topics.find(w.guild.id, RL)
    assert topic is not None and topic.is_catalog
    assert f"<#{w.papers.id}> now follows **RL Post" in content
    assert "```\n" + topic.query.strip() + "\n```" in content
    assert (await bot.ctx.momentum(topic)).sentence() in content
    assert [paper_compact_line(p) in content for p in history] == [True, True, True, False]
    assert "from now on" in content and "one post per paper" in content
    [follow] = await bot.ctx.store.follows.for_guild(w.guild.id)
    assert (follow.channel_id, follow.topic_id, follow.mode, follow.digest_hour) == (
        w.papers.id,
        topic.id,
        "each",
        8,
    )

    later = BASE_TIME + timedelta(days=2)
    fresh = [rl_paper(101, published=later), rl_paper(102, published=later)]
    await ingest(bot, [*fresh, plain_paper(103, published=later)])
    report = await bot.worker.deliver_once()
    again = await bot.worker.deliver_once()

    posted = discord.messages(w.papers.id)
    assert (report.sent, again.sent) == (2, 0)
    assert sorted(m["embeds"][0]["url"] for m in posted) == sorted(p.abs_url for p in fresh)
    assert all(RL in m["embeds"][0]["footer"]["text"] for m in posted)


async def test_follow_with_a_new_query_creates_and_later_changes_this_servers_topic(running: Any) -> None:
    bot, discord, w = running
    sparse = [plain_paper(n, f"Sparse attention for long documents {n}") for n in (1, 2)]
    linear = plain_paper(3, "Linear attention at scale")
    await ingest(bot, [*sparse, linear, plain_paper(4)])

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
    topic = await bot.ctx.store.topics.find(w.guild.id, "Sparse Attention")
    assert topic is not None and topic.guild_id == w.guild.id
    assert await bot.ctx.store.topics.find(w.guild_b.id, "Sparse Attention") is None
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
    [follow] = await bot.ctx.store.follows.for_guild(w.guild.id)
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

    assert await bot.ctx.store.follows.for_guild(w.guild.id) == []
    assert await bot.ctx.store.topics.find(w.guild.id, "Broken") is None


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

    follows = await bot.ctx.store.follows.for_guild(w.guild.id)
    assert [f.channel_id for f in follows] == [w.papers.id]


async def test_follow_a_forum_posts_each_paper_as_a_thread(running: Any) -> None:
    bot, discord, w = running
    await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, channel=w.forum))
    await ingest(bot, [rl_paper(1, published=NOW - timedelta(hours=1))])
    report = await bot.worker.deliver_once()
    assert report.sent == 1
    [thread] = discord.threads(w.forum.id)
    assert thread["name"].startswith("GRPO for reasoning")


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

    assert len(await bot.ctx.store.follows.for_guild(w.guild.id)) == 1
    assert await bot.ctx.store.follows.for_guild(w.guild_b.id) == []


async def test_topics_lists_follows_and_unfollow_removes_them(running: Any) -> None:
    bot, discord, w = running
    for options in ({"channel": w.papers}, {"channel": w.other, "mode": "digest", "digest_hour": 6}):
        await public_reply(await invoke(discord, w.guild, w.papers, w.admin, "follow", topic=RL, **options))
    await ingest(bot, [rl_paper(1, published=NOW - timedelta(hours=1))])
    await bot.worker.deliver_once()  # the 'each' follow posts; the digest one waits for 06:00

    response = await (await invoke(discord, w.guild, w.papers, w.member, "topics")).wait_response()
    assert response["data"]["flags"] & EPHEMERAL
    [embed] = response["data"]["embeds"]
    papers_line, other_line = embed["description"].split("\n")  # sorted by channel id, papers first
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
    assert await bot.ctx.store.follows.for_guild(w.guild.id) == []


async def test_topics_fits_discord_limits_with_many_follows(running: Any) -> None:
    bot, discord, w = running
    for n in range(60):
        name = f"{n:02d} " + "very long topic name " * 4
        topic, _ = await bot.ctx.topics.save_custom(w.guild.id, name[:80], f"ti:word{n}")
        await bot.ctx.store.follows.upsert(
            guild_id=w.guild.id,
            channel_id=w.papers.id,
            topic_id=topic.id,
            mode="each",
            digest_hour=8,
            created_by=None,
            at=NOW,
        )
    response = await (await invoke(discord, w.guild, w.papers, w.admin, "topics")).wait_response()
    [embed] = response["data"]["embeds"]
    assert len(embed["description"]) <= 4096
    assert embed["description"].endswith("more") and "60 follows" in embed["footer"]["text"]
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


def test_follow_message_stays_within_2000_characters_for_the_longest_inputs() -> None:
    name = "*_@everyone " * 7
    query = "`" * 250 + "x" * 250  # 500 characters, the most a topic query may have
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
    assert len(body) == 500 and "`" not in body  # the whole query, and nothing that closes the block
    assert "@everyone" not in text and text.endswith("Older papers: /latest.")
    assert 0 < sum(paper_compact_line(p) in text for p in papers) < 3  # fewer papers, never a cut one

"""The loopback fake Discord, proven with the real discord.py client (REST + gateway over 127.0.0.1)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from bot.loopback.discord import (
    ALL_PERMISSIONS,
    MANAGE_GUILD,
    Channel,
    Guild,
    Member,
    pointing_discord_at,
    running_client,
)
from bot.loopback.discord.records import EMBED_LINKS, SEND_MESSAGES
from tests.fakes.checked_discord import FakeDiscord
from tests.fakes.openapi_validator import OpenAPIValidator, limit_violations

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


@dataclass
class World:
    guild: Guild
    papers: Channel
    forum: Channel
    alice: Member


class TestBot(commands.Bot):
    """A small bot with the interaction shapes paperwatch uses: reply, defer + file, autocomplete, groups."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=discord.Intents.default(),
            chunk_guilds_at_startup=False,
            guild_ready_timeout=0.1,
            allowed_mentions=discord.AllowedMentions.none(),
        )
        self.errors: list[BaseException] = []
        self.errored = asyncio.Event()
        self.tree.on_error = self._on_tree_error  # type: ignore[method-assign]
        self._add_commands()

    async def _on_tree_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        self.errors.append(error)
        self.errored.set()

    def _add_commands(self) -> None:
        @self.tree.command(name="ping", description="Reply with pong")
        async def ping(interaction: discord.Interaction) -> None:
            await interaction.response.send_message("pong", ephemeral=True)

        @self.tree.command(name="report", description="A chart, after thinking")
        async def report(interaction: discord.Interaction) -> None:
            await interaction.response.defer()
            await interaction.followup.send("weekly chart", file=discord.File(io.BytesIO(PNG), "chart.png"))

        @self.tree.command(name="paper", description="Show a paper")
        async def paper(interaction: discord.Interaction, query: str) -> None:
            await interaction.response.send_message(f"paper {query}")

        @paper.autocomplete("query")
        async def paper_choices(
            interaction: discord.Interaction, current: str
        ) -> list[app_commands.Choice[str]]:
            return [app_commands.Choice(name=f"{current} {i}", value=f"{current}-{i}") for i in range(3)]

        @self.tree.command(name="lifecycle", description="Reply with a file, edit, follow up, edit, delete")
        async def lifecycle(interaction: discord.Interaction) -> None:
            await interaction.response.send_message("draft", file=discord.File(io.BytesIO(PNG), "draft.png"))
            await interaction.edit_original_response(content="final", attachments=[])
            extra = await interaction.followup.send("extra", wait=True)
            await extra.edit(content="extra, edited")
            fetched = await interaction.original_response()
            await interaction.followup.send(
                f"original: {fetched.content!r}, {len(fetched.attachments)} files"
            )
            await interaction.delete_original_response()

        topics = app_commands.Group(name="topics", description="Followed topics")

        @topics.command(name="follow", description="Follow a topic in a channel")
        async def follow(interaction: discord.Interaction, topic: str, channel: discord.TextChannel) -> None:
            perms = interaction.permissions.manage_guild
            await interaction.response.send_message(f"{topic} -> #{channel.name} (manage_guild={perms})")

        self.tree.add_command(topics)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        yield server
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert leftover == [], "the client or the fake leaked tasks"


@pytest.fixture
def world(fake: FakeDiscord) -> World:
    guild = fake.add_guild("Lab")
    papers = fake.add_text_channel(guild, "papers")
    forum = fake.add_forum_channel(guild, "paper-forum", tags=("cs.LG", "cs.CL"))
    alice = fake.add_member(guild, "alice", permissions=MANAGE_GUILD | SEND_MESSAGES)
    return World(guild, papers, forum, alice)


@pytest.fixture
async def bot(fake: FakeDiscord, world: World) -> AsyncIterator[TestBot]:
    async with running_client(fake, TestBot()) as client:
        assert isinstance(client, TestBot)
        yield client


async def synced(bot: TestBot, fake: FakeDiscord) -> None:
    await bot.tree.sync()
    assert {c["name"] for c in fake.commands} == {"ping", "report", "paper", "lifecycle", "topics"}


def text_channel(bot: TestBot, channel: Channel) -> discord.TextChannel:
    found = bot.get_channel(channel.id)
    assert isinstance(found, discord.TextChannel)
    return found


# ---- login, ready, sync, interactions ----------------------------------------------------------------------


async def test_login_and_ready_show_the_guild_and_its_channels(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    guild = bot.get_guild(world.guild.id)
    assert guild is not None and guild.name == "Lab"
    assert isinstance(guild.get_channel(world.papers.id), discord.TextChannel)
    forum = guild.get_channel(world.forum.id)
    assert isinstance(forum, discord.ForumChannel)
    assert [t.name for t in forum.available_tags] == ["cs.LG", "cs.CL"]
    assert bot.user is not None and bot.user.id == fake.bot_user_id
    assert bot.application_id == fake.application_id
    assert text_channel(bot, world.papers).permissions_for(guild.me).send_messages
    assert [r.path for r in fake.requests[:2]] == ["/users/@me", "/oauth2/applications/@me"]
    assert fake.identify_count == 1
    assert fake.violations == []


async def test_bad_token_is_a_login_failure(fake: FakeDiscord, world: World) -> None:
    client = TestBot()
    with pytest.raises(discord.LoginFailure):
        async with running_client(fake, client, token="not-the-token"):
            pass
    assert fake.requests[0].status == 401


async def test_slash_command_is_synced_invoked_and_answered(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    await synced(bot, fake)
    interaction = await fake.invoke(world.guild, world.papers, world.alice, "ping")
    original = await interaction.wait_original()
    assert interaction.callback_type == 4
    assert original["content"] == "pong"
    assert original["flags"] & 64  # ephemeral
    assert fake.messages(world.papers.id) == []  # interaction replies live on the interaction record
    assert bot.errors == [] and fake.violations == []


async def test_subcommand_with_channel_option_sees_member_permissions(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    await synced(bot, fake)
    interaction = await fake.invoke(
        world.guild,
        world.papers,
        world.alice,
        "topics follow",
        [{"name": "topic", "value": "RL"}, {"name": "channel", "value": world.papers}],
    )
    original = await interaction.wait_original()
    assert original["content"] == "RL -> #papers (manage_guild=True)"
    assert bot.errors == [] and fake.violations == []


async def test_defer_then_followup_with_file_fills_the_thinking_message(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    await synced(bot, fake)
    interaction = await fake.invoke(world.guild, world.papers, world.alice, "report")
    [message] = await interaction.wait_followups(1)
    assert interaction.callback_type == 5
    assert message["content"] == "weekly chart"
    assert [a["filename"] for a in message["attachments"]] == ["chart.png"]
    assert message is interaction.original and not message["flags"] & 128  # no longer "thinking"
    upload = fake.requests_to("POST", "/webhooks/{app}/{token}")[0]
    assert upload.query["wait"] == "1" and upload.files[0].data == PNG
    assert bot.errors == [] and fake.violations == []


async def test_original_response_and_followups_can_be_edited_fetched_and_deleted(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    await synced(bot, fake)
    interaction = await fake.invoke(world.guild, world.papers, world.alice, "lifecycle")
    await fake.wait_for(lambda: any(r.method == "DELETE" for r in fake.requests))
    callback = interaction.responses[0]
    assert callback["type"] == 4 and callback["data"]["attachments"][0]["filename"] == "draft.png"
    assert interaction.original is None  # deleted last
    extra, report = interaction.followup_messages
    assert extra["content"] == "extra, edited" and extra["edited_timestamp"] is not None
    assert report["content"] == "original: 'final', 0 files"
    assert [e["content"] for e in interaction.edits] == ["final", "extra, edited"]
    assert all(r.headers["Authorization"] == "<absent>" for r in fake.requests if "/webhooks/" in r.path)
    assert bot.errors == [] and fake.violations == []


async def test_answering_after_the_deadline_is_a_violation(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    await synced(bot, fake)
    fake.interaction_deadline = 0.0  # every answer is late: no need to wait three real seconds
    interaction = await fake.invoke(world.guild, world.papers, world.alice, "ping")
    await fake.wait_for(lambda: any(r.path.startswith("/interactions/") for r in fake.requests))
    assert interaction.responses == []
    assert len(fake.violations) == 1 and "answered after" in fake.violations[0]
    async with asyncio.timeout(10):
        await bot.errored.wait()
    assert isinstance(bot.errors[0].__cause__, discord.NotFound)


async def test_autocomplete_returns_the_bots_choices(fake: FakeDiscord, world: World, bot: TestBot) -> None:
    await synced(bot, fake)
    choices = await fake.autocomplete(
        world.guild, world.papers, world.alice, "paper", [{"name": "query", "value": "llm"}]
    )
    assert choices == [{"name": f"llm {i}", "value": f"llm-{i}"} for i in range(3)]
    assert fake.violations == []


async def test_invoking_an_unsynced_command_is_refused(fake: FakeDiscord, world: World, bot: TestBot) -> None:
    with pytest.raises(LookupError, match="never synced"):
        await fake.invoke(world.guild, world.papers, world.alice, "ping")


# ---- channel messages, faults, limits ----------------------------------------------------------------------


async def test_same_nonce_twice_creates_one_message(fake: FakeDiscord, world: World, bot: TestBot) -> None:
    channel = text_channel(bot, world.papers)
    embed = discord.Embed(title="A paper", description="abstract")
    first = await channel.send(embed=embed, nonce="paper-2401.00001")
    second = await channel.send(embed=embed, nonce="paper-2401.00001")
    assert first.id == second.id
    [stored] = fake.messages(world.papers.id)
    assert stored["embeds"][0]["title"] == "A paper" and stored["nonce"] == "paper-2401.00001"
    assert fake.violations == []


@pytest.mark.parametrize("global_", [False, True])
async def test_429_with_via_is_retried_and_the_message_arrives_once(
    fake: FakeDiscord, world: World, bot: TestBot, global_: bool
) -> None:
    fake.fail_next("POST /channels/{id}/messages", 429, retry_after=0.05, global_=global_)
    await text_channel(bot, world.papers).send("hello")
    assert [r.status for r in fake.requests_to("POST", "/channels/*/messages")] == [429, 200]
    assert [m["content"] for m in fake.messages(world.papers.id)] == ["hello"]
    assert fake.violations == []


async def test_lost_response_then_retry_with_same_nonce_is_idempotent(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    fake.fail_next("POST /channels/{id}/messages", 403, applied=True)  # created, but the bot sees an error
    channel = text_channel(bot, world.papers)
    with pytest.raises(discord.Forbidden):
        await channel.send("card", nonce="n-1")
    await channel.send("card", nonce="n-1")
    assert len(fake.messages(world.papers.id)) == 1


async def test_500_after_the_write_is_retried_with_the_same_nonce(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    fake.fail_next("POST /channels/{id}/messages", 500, applied=True)
    sent = await text_channel(bot, world.papers).send("once")  # discord.py retries after 1 s
    assert [r.status for r in fake.requests_to("POST", "/channels/*/messages")] == [500, 200]
    [stored] = fake.messages(world.papers.id)
    assert stored["id"] == str(sent.id)


async def test_403_raises_forbidden_in_the_bot(fake: FakeDiscord, world: World, bot: TestBot) -> None:
    fake.fail_next("/channels/*/messages", 403)
    with pytest.raises(discord.Forbidden) as caught:
        await text_channel(bot, world.papers).send("hello")
    assert caught.value.code == 50001
    assert fake.messages(world.papers.id) == []


async def test_deleted_channel_is_not_found(fake: FakeDiscord, world: World, bot: TestBot) -> None:
    channel = text_channel(bot, world.papers)
    fake.delete_channel(world.papers)
    with pytest.raises(discord.NotFound) as caught:
        await channel.send("hello")
    assert caught.value.code == 10003


async def test_content_over_2000_is_a_recorded_violation(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    with pytest.raises(discord.HTTPException) as caught:
        await text_channel(bot, world.papers).send("x" * 2001)
    assert caught.value.status == 400 and caught.value.code == 50035
    assert fake.violations == ["create_message: $.content: 2001 characters > 2000"]
    assert fake.messages(world.papers.id) == []


async def test_bot_permissions_per_channel(fake: FakeDiscord, world: World, bot: TestBot) -> None:
    channel = text_channel(bot, world.papers)
    updated = asyncio.create_task(bot.wait_for("guild_channel_update", timeout=10))
    fake.set_bot_permissions(world.papers, ALL_PERMISSIONS & ~SEND_MESSAGES)
    await updated
    assert not channel.permissions_for(channel.guild.me).send_messages
    with pytest.raises(discord.Forbidden) as caught:
        await channel.send("hello")
    assert caught.value.code == 50013
    await synced(bot, fake)
    interaction = await fake.invoke(world.guild, world.papers, world.alice, "ping")
    assert not int(interaction.payload["app_permissions"]) & SEND_MESSAGES
    await interaction.wait_response()


async def test_without_embed_links_embeds_are_dropped_or_refused(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    fake.set_bot_permissions(world.papers, ALL_PERMISSIONS & ~EMBED_LINKS)
    channel = text_channel(bot, world.papers)
    sent = await channel.send("text survives", embed=discord.Embed(title="dropped"))
    assert sent.embeds == []
    with pytest.raises(discord.Forbidden):
        await channel.send(embed=discord.Embed(title="nothing else to show"))


async def test_forum_post_with_tags(fake: FakeDiscord, world: World, bot: TestBot) -> None:
    forum = bot.get_channel(world.forum.id)
    assert isinstance(forum, discord.ForumChannel)
    tag = next(t for t in forum.available_tags if t.name == "cs.CL")
    created = await forum.create_thread(name="New paper", embed=discord.Embed(title="T"), applied_tags=[tag])
    assert created.thread.name == "New paper" and created.message.id == created.thread.id
    [thread] = fake.threads(world.forum.id)
    assert thread["applied_tags"] == [str(tag.id)] and thread["message"]["embeds"][0]["title"] == "T"
    await created.thread.send("reply in the thread")
    assert [m["content"] for m in fake.messages(created.thread.id)] == ["", "reply in the thread"]
    assert fake.violations == []


# ---- gateway -------------------------------------------------------------------------------------------------


async def test_gateway_close_4000_resumes_and_replays_missed_interactions(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    await synced(bot, fake)
    first = await fake.invoke(world.guild, world.papers, world.alice, "ping")
    await first.wait_response()
    resumed = asyncio.create_task(bot.wait_for("resumed", timeout=10))
    fake.hold_gateway()
    await fake.close_gateway(4000)
    missed = await fake.invoke(
        world.guild, world.papers, world.alice, "paper", [{"name": "query", "value": "x"}]
    )
    fake.release_gateway()
    original = await missed.wait_original()
    assert original["content"] == "paper x"
    await resumed
    assert fake.identify_count == 1 and fake.resume_count == 1
    resume = next(e for e in fake.gateway_log if e[0] == "RESUME")
    assert resume[2] == "/gateway/resume"  # reconnected through resume_gateway_url
    assert ("REPLAY", "INTERACTION_CREATE") in fake.gateway_log
    after = await fake.invoke(world.guild, world.papers, world.alice, "ping")
    assert (await after.wait_original())["content"] == "pong"
    assert bot.errors == [] and fake.violations == []


# ---- raw HTTP: headers, enforcement, routing (no discord.py in between) ---------------------------------------


async def test_rate_limit_headers_are_honoured_by_discord_py(
    fake: FakeDiscord, world: World, bot: TestBot
) -> None:
    fake.set_rate_limit(per_channel=(2, 0.3), global_per_second=None)
    channel = text_channel(bot, world.papers)
    for i in range(4):
        await channel.send(f"m{i}")
    statuses = [r.status for r in fake.requests_to("POST", "/channels/*/messages")]
    assert statuses == [200] * 4  # discord.py waited on Remaining: 0 instead of meeting a 429
    assert len(fake.messages(world.papers.id)) == 4


async def test_rate_limits_are_enforced_with_discord_style_429s(fake: FakeDiscord, world: World) -> None:
    fake.set_rate_limit(per_channel=(2, 5.0), global_per_second=None)
    url = f"{fake.api_base}/channels/{world.papers.id}/messages"
    auth = {"Authorization": f"Bot {fake.token}"}
    async with aiohttp.ClientSession() as http:
        replies = []
        for i in range(3):
            async with http.post(url, json={"content": f"m{i}"}, headers=auth) as resp:
                replies.append((resp.status, dict(resp.headers), await resp.json()))
    assert [status for status, _, _ in replies] == [200, 200, 429]
    assert replies[0][1]["X-RateLimit-Remaining"] == "1" and replies[1][1]["X-RateLimit-Remaining"] == "0"
    assert {"X-RateLimit-Bucket", "X-RateLimit-Limit", "X-RateLimit-Reset-After"} <= replies[0][1].keys()
    _, headers, body = replies[2]
    assert headers["Via"] and headers["Content-Type"] == "application/json"
    assert body["global"] is False and 0 < body["retry_after"] <= 5.0
    fake.set_rate_limit(per_channel=None, global_per_second=1)
    async with aiohttp.ClientSession() as http:
        statuses = []
        for _ in range(2):
            async with http.get(f"{fake.api_base}/users/@me", headers=auth) as resp:
                statuses.append((resp.status, (await resp.json()).get("global")))
    assert statuses == [(200, None), (429, True)]


async def test_read_routes_and_auth(fake: FakeDiscord, world: World) -> None:
    auth = {"Authorization": f"Bot {fake.token}"}
    commands_url = f"{fake.api_base}/applications/{fake.application_id}/guilds/{world.guild.id}/commands"
    async with aiohttp.ClientSession(headers=auth) as http:
        async with http.get(f"{fake.api_base}/gateway/bot") as resp:
            assert (await resp.json())["url"] == fake.gateway_url
        async with http.get(f"{fake.api_base}/channels/{world.forum.id}") as resp:
            forum = await resp.json()
            assert forum["type"] == 15 and [t["name"] for t in forum["available_tags"]] == ["cs.LG", "cs.CL"]
        async with http.put(commands_url, json=[{"name": "latest", "description": "Newest papers"}]) as resp:
            [created] = await resp.json()
        async with http.get(commands_url) as resp:
            assert await resp.json() == [created]
        assert created["guild_id"] == str(world.guild.id) and fake.commands == [created]
        async with http.get(f"{fake.api_base}/users/@me", headers={"Authorization": "Bot wrong"}) as resp:
            assert resp.status == 401
    assert fake.violations == []


async def test_unknown_route_is_a_404_and_a_violation(fake: FakeDiscord) -> None:
    async with aiohttp.ClientSession() as http, http.get(f"{fake.api_base}/guilds/1/audit-logs") as resp:
        assert resp.status == 404
        assert resp.headers["Content-Type"] == "application/json"
    assert fake.violations == ["unknown route GET /api/v10/guilds/1/audit-logs"]


async def test_pointing_restores_discord_globals(fake: FakeDiscord) -> None:
    def current() -> tuple[str, str]:
        return discord.http.Route.BASE, str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)

    before = current()
    with pointing_discord_at(fake):
        assert current() == (fake.api_base, fake.gateway_url)
    assert current() == before


# ---- the validator on its own ----------------------------------------------------------------------------------


def test_validator_reports_the_intended_union_branch() -> None:
    validator = OpenAPIValidator()
    op = validator.find_operation("POST", "/interactions/1/tok/callback")
    assert op is not None and op.operation_id == "create_interaction_response"
    body = {"type": 4, "data": {"content": "hi", "embeds": [{"title": "t" * 300}]}}
    assert validator.schema_violations(op, body) == [
        "create_interaction_response: $.data.embeds[0].title: fails maxLength=256 (length 300)"
    ]
    assert validator.schema_violations(op, {"type": 5, "data": {"flags": 64}}) == []
    messages = validator.find_operation("POST", "/channels/1/messages")
    assert messages is not None
    # discord.py sends attachment ids as integers; Discord accepts them as snowflakes.
    assert validator.schema_violations(messages, {"attachments": [{"id": 0, "filename": "a.png"}]}) == []


def test_limits_the_spec_misses() -> None:
    two_embeds = {"embeds": [{"description": "d" * 4000}, {"description": "d" * 2001}]}
    assert limit_violations("create_message", two_embeds) == [
        "create_message: $.embeds: 6001 characters in all embeds > 6000"
    ]
    fields = {"embeds": [{"fields": [{"name": "n", "value": "v" * 1025}] * 26}]}
    found = limit_violations("execute_webhook", fields)
    assert "execute_webhook: $.embeds[0].fields: 26 fields > 25" in found
    assert "execute_webhook: $.embeds[0].fields[0].value: 1025 characters > 1024" in found
    post = {"name": "n" * 101, "applied_tags": ["1"] * 6, "message": {"content": "ok"}}
    assert limit_violations("create_thread", post) == [
        "create_thread: $.name: thread name 101 characters > 100",
        "create_thread: $.applied_tags: 6 tags > 5",
    ]
    choices = {"type": 8, "data": {"choices": [{"name": "a", "value": "a"}] * 26}}
    assert limit_violations("create_interaction_response", choices) == [
        "create_interaction_response: $.data.choices: 26 choices > 25"
    ]

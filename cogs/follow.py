"""/follow, /unfollow and /topics: which channels of a server receive which topics' new papers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.errors import PaperwatchError
from bot.render import EMBED_TOTAL_LIMIT, embed_size, human_join, safe_name
from bot.services.follows import DEFAULT_DIGEST_HOUR, DEFAULT_MATCH, Followed, UnfollowPlan
from bot.services.topics import MAX_NAME_LENGTH, MAX_QUERY_LENGTH, NO_PARENT
from cogs.common import guild_id_of, services, topic_autocomplete
from cogs.follow_replies import (
    NO_FOLLOWS,
    FollowTarget,
    follow_message,
    mentions_text,
    topic_note,
    topics_embed,
    tree_embed,
)

PREVIEW_PAPERS = 3
# An interaction's reply can be edited for 15 minutes: a longer history match stops editing a little before.
REPLY_EDITABLE = timedelta(minutes=14)


class FollowChannel(app_commands.Transformer):
    """A text, announcement or forum channel. Media channels (forums that want images) are left out of the
    picker, and with them channel type 16, which Discord's OpenAPI description does not list."""

    @property
    def type(self) -> discord.AppCommandOptionType:
        return discord.AppCommandOptionType.channel

    @property
    def channel_types(self) -> list[discord.ChannelType]:
        return [discord.ChannelType.text, discord.ChannelType.news, discord.ChannelType.forum]

    async def transform(self, interaction: discord.Interaction, value: object) -> object:
        # Checked in the command (target_channel), where a refusal can say what to do.
        resolved = value.resolve() if isinstance(value, app_commands.AppCommandChannel) else None
        return resolved or value


ChannelOption = app_commands.Transform[FollowTarget, FollowChannel]

# What the bot needs to post cards: (permission flag, its name in Discord's UI).
_TEXT_NEEDS = (
    ("view_channel", "View Channel"),
    ("send_messages", "Send Messages"),
    ("embed_links", "Embed Links"),
)
_FORUM_NEEDS = (
    ("view_channel", "View Channel"),
    ("send_messages", "Create Posts"),
    ("send_messages_in_threads", "Send Messages in Posts"),
    ("embed_links", "Embed Links"),
)


# ---------------------------------------------------------------------------------------------------------
# Permission rules


def target_channel(interaction: discord.Interaction, channel: FollowTarget | None) -> FollowTarget:
    """The channel named, else the one the command runs in; it must be a text or forum channel of this server."""
    target = channel if channel is not None else interaction.channel
    if isinstance(target, app_commands.AppCommandChannel):  # not among this server's channels
        raise PaperwatchError("That channel is not in this server: pick one of this server's channels.")
    is_media = isinstance(target, discord.ForumChannel) and target.is_media()
    if not isinstance(target, discord.TextChannel | discord.ForumChannel) or is_media:
        raise PaperwatchError(
            "Papers can go to a text or forum channel only: name one with the channel option."
        )
    if target.guild.id != interaction.guild_id:
        raise PaperwatchError("That channel is not in this server: pick one of this server's channels.")
    return target


def _member(interaction: discord.Interaction) -> discord.Member:
    if not isinstance(interaction.user, discord.Member):
        raise PaperwatchError("This command works in a server, not in direct messages.")
    return interaction.user


def may_manage(member: discord.Member, channel: discord.abc.GuildChannel | None) -> bool:
    """Manage Server anywhere, or Manage Channels on that channel (server-wide for a channel that is gone)."""
    if member.guild_permissions.manage_guild:
        return True
    if channel is None:
        return member.guild_permissions.manage_channels
    return channel.permissions_for(member).manage_channels


def require_may_manage(member: discord.Member, channels: Sequence[discord.abc.GuildChannel | None]) -> None:
    refused = [c for c in channels if not may_manage(member, c)]
    if refused:
        where = human_join([c.mention for c in refused if c is not None]) or "those channels"
        raise PaperwatchError(
            f"You need the Manage Server permission, or Manage Channels on {where}, to change follows there."
        )


def require_may_change_topic(
    member: discord.Member, topic: str, following: Sequence[int], guild: discord.Guild
) -> None:
    """A topic's query and place decide what every channel following it, or a topic above it, receives:
    changing them needs Manage Server, or Manage Channels on each of those channels (`following`: their ids)."""
    if all(may_manage(member, guild.get_channel(c)) for c in following):
        return
    where = mentions_text(following)
    raise PaperwatchError(
        f"**{safe_name(topic)}** decides what {where} receive (they follow it or a topic above it): changing its "
        "query or its parent needs the Manage Server permission, or Manage Channels on every one of those "
        "channels. For a topic of your own, pick a new name."
    )


def missing_bot_permissions(channel: FollowTarget) -> list[str]:
    perms = channel.permissions_for(channel.guild.me)
    needs = _FORUM_NEEDS if isinstance(channel, discord.ForumChannel) else _TEXT_NEEDS
    return [label for flag, label in needs if not getattr(perms, flag)]


def require_bot_may_post(channel: FollowTarget) -> None:
    missing = missing_bot_permissions(channel)
    if missing:
        noun = "permission" if len(missing) == 1 else "permissions"
        me = safe_name(channel.guild.me.display_name, 80)
        raise PaperwatchError(
            f"Give {me} the {human_join(missing)} {noun} in {channel.mention} "
            "(channel settings → Permissions), then run /follow again."
        )


# ---------------------------------------------------------------------------------------------------------
# The cog


class FollowCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot
        self._watchers: set[asyncio.Task[None]] = set()  # answers edited while a history is matched

    @app_commands.command(name="follow", description="Post a topic's new papers in a channel of this server")
    @app_commands.guild_only()
    @app_commands.describe(
        topic="A topic from the list, or a new name (with a query) to create this server's own",
        channel="Text or forum channel to post in (default: this channel)",
        query='arXiv search syntax, e.g. ti:"sparse attention" AND cat:cs.LG; creates or changes the topic',
        mode="each: one post per paper as it arrives; digest: one post a day",
        digest_hour="Hour of the daily digest, 0-23 in UTC (default 8)",
        parent=f"Put this server's topic under a topic (e.g. RL Post-Training) it belongs to; {NO_PARENT}: at the top",
        match="exact: the query's matches (default); suggested: also papers close to the topic's papers, marked",
    )
    @app_commands.autocomplete(topic=topic_autocomplete, parent=topic_autocomplete)
    async def follow(
        self,
        interaction: discord.Interaction,
        topic: app_commands.Range[str, 1, MAX_NAME_LENGTH],
        channel: ChannelOption | None = None,
        query: app_commands.Range[str, 1, MAX_QUERY_LENGTH] | None = None,
        mode: Literal["each", "digest"] = "each",
        digest_hour: app_commands.Range[int, 0, 23] = DEFAULT_DIGEST_HOUR,
        parent: app_commands.Range[str, 1, MAX_NAME_LENGTH] | None = None,
        match: Literal["exact", "suggested"] = DEFAULT_MATCH,
    ) -> None:
        use = services(interaction)
        target = target_channel(interaction, channel)
        member = _member(interaction)
        require_may_manage(member, [target])
        require_bot_may_post(target)
        # Every input is checked before deferring, so a mistake gets a private answer.
        plan = await use.follows.plan(
            guild_id_of(interaction),
            target.id,
            topic,
            query=query,
            mode=mode,
            digest_hour=digest_hour,
            created_by=interaction.user.id,
            parent=parent,
            match=match,
            channel_type=target.type.value,  # deliver processes post by it without fetching the channel
        )
        if plan.guarded:
            require_may_change_topic(member, plan.topic_name, plan.guarded, target.guild)
        await interaction.response.defer(thinking=True)  # history matching and momentum take a while

        # A history longer than a batch is matched in the background: the answer comes at once, and is
        # edited as the match goes on (`_follow_history`); the store's queue keeps it across a restart.
        done = await use.follows.follow(plan, history_later=True)
        await interaction.followup.send(await self._answer(interaction, target, done, topic_note(done)))
        if done.matching is not None:
            watcher = asyncio.create_task(self._follow_history(interaction, target, done))
            self._watchers.add(watcher)
            watcher.add_done_callback(self._watchers.discard)

    async def _answer(
        self, interaction: discord.Interaction, target: FollowTarget, done: Followed, note: str | None
    ) -> str:
        use, guild_id = services(interaction), guild_id_of(interaction)
        return follow_message(
            topic=done.topic,
            channel=target,
            follow=done.follow,
            is_new=done.is_new,
            topic_note=note,
            momentum=await use.momentum.topic(done.topic, guild_id=guild_id),
            latest=await use.history.latest(done.topic, PREVIEW_PAPERS, guild_id),
        )

    async def _follow_history(
        self, interaction: discord.Interaction, target: FollowTarget, done: Followed
    ) -> None:
        """Edit the answer at each tenth of the history matched in the background, then into the full answer
        (what the topic holds, its momentum and latest papers), while Discord lets the reply be edited."""
        use = services(interaction)
        until = self.bot.ctx.clock.now() + REPLY_EDITABLE
        shown = 0
        with contextlib.suppress(discord.HTTPException):  # a lost edit loses nothing: /status shows it too
            async for share in use.follows.history_steps(done.topic):
                if self.bot.ctx.clock.now() > until:
                    return
                if int(share * 10) > shown and share < 1:  # done: the full answer follows
                    shown = int(share * 10)
                    note = topic_note(done, share)
                    await interaction.edit_original_response(
                        content=await self._answer(interaction, target, done, note)
                    )
            if self.bot.ctx.clock.now() <= until:
                finished = replace(done, matched=await use.follows.matched(done.topic), matching=None)
                text = await self._answer(interaction, target, finished, topic_note(finished))
                await interaction.edit_original_response(content=text)

    async def cog_unload(self) -> None:
        for watcher in list(self._watchers):
            watcher.cancel()

    @app_commands.command(name="unfollow", description="Stop posting a topic's papers in this server")
    @app_commands.guild_only()
    @app_commands.describe(
        topic="The followed topic", channel="Only this channel (default: every channel of this server)"
    )
    @app_commands.autocomplete(topic=topic_autocomplete)
    async def unfollow(
        self,
        interaction: discord.Interaction,
        topic: app_commands.Range[str, 1, MAX_NAME_LENGTH],
        channel: ChannelOption | None = None,
    ) -> None:
        if channel is not None:
            target_channel(interaction, channel)
        plan = await services(interaction).follows.plan_unfollow(
            guild_id_of(interaction), topic, channel.id if channel is not None else None
        )
        if plan.deletes_topic:
            await self._delete_topic(interaction, plan)
            return
        name = safe_name(plan.topic.name)
        ending = plan.ending
        if not ending:
            where = channel.mention if channel is not None else "this server"
            raise PaperwatchError(
                f"**{name}** is not followed in {where}. /topics lists what this server follows."
            )
        guild = interaction.guild
        assert guild is not None  # guild_only
        require_may_manage(_member(interaction), [guild.get_channel(f.channel_id) for f in ending])
        removed = await services(interaction).follows.unfollow(plan)
        noun = "channel" if removed == 1 else "channels"
        channels = mentions_text([f.channel_id for f in ending])
        text = f"Unfollowed **{name}** in {removed} {noun} ({channels}): no more posts of it there."
        if not plan.topic.is_catalog and plan.ends_every_follow:
            text += (
                f" **{name}** stays this server's topic for /latest, /search and /momentum; "
                "/unfollow it again to delete it."
            )
        await interaction.response.send_message(text)

    async def _delete_topic(self, interaction: discord.Interaction, plan: UnfollowPlan) -> None:
        """A server's own topic that no channel follows: deleted, by someone who may manage the server."""
        name = safe_name(plan.topic.name)
        if not _member(interaction).guild_permissions.manage_guild:
            raise PaperwatchError(
                f"No channel follows **{name}**. Deleting this server's topic needs the Manage Server permission."
            )
        await services(interaction).follows.delete_topic(plan)
        await interaction.response.send_message(
            f"Deleted this server's topic **{name}**: no channel followed it. "
            "Create it again with /follow topic:<name> query:<arXiv query>."
        )

    @app_commands.command(
        name="topics", description="What this server follows, where, and the tree of topics"
    )
    @app_commands.guild_only()
    async def topics(self, interaction: discord.Interaction) -> None:
        use = services(interaction)
        guild_id = guild_id_of(interaction)
        follows = await use.follows.in_server(guild_id)
        tree = await use.topics.tree(guild_id)
        followed = {f.topic_id for f in follows}
        query_only = use.topics.query_only([topic for _, topic in tree.rows])
        if not follows:
            embed = tree_embed(tree, followed, EMBED_TOTAL_LIMIT, query_only)
            await interaction.response.send_message(NO_FOLLOWS, embed=embed, ephemeral=True)
            return
        guild_name = interaction.guild.name if interaction.guild else "this server"
        ratings = await use.ratings.counts(guild_id, sorted(followed))
        first = topics_embed(guild_name, follows, tree, ratings)
        second = tree_embed(tree, followed, EMBED_TOTAL_LIMIT - embed_size(first), query_only)
        await interaction.response.send_message(embeds=[first, second], ephemeral=True)


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(FollowCog(bot))

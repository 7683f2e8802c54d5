"""/follow, /unfollow and /topics: which channels of a server receive which topics' new papers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.errors import PaperwatchError
from bot.models import Follow, Mode, Paper, TopicRow
from bot.momentum import Momentum
from bot.render import (
    CONTENT_LIMIT,
    DESCRIPTION_LIMIT,
    EMBED_TOTAL_LIMIT,
    TITLE_LIMIT,
    clip,
    code_block,
    embed_size,
    fit_lines,
    human_join,
    inert_markdown,
    paper_compact_line,
    safe_name,
)
from bot.services.follows import (
    DEFAULT_DIGEST_HOUR,
    DEFAULT_MATCH,
    Followed,
    HistoryProgress,
    UnfollowPlan,
)
from bot.services.topics import MAX_NAME_LENGTH, MAX_QUERY_LENGTH, NO_PARENT, TopicTree
from cogs.common import guild_id_of, services, topic_autocomplete

PREVIEW_PAPERS = 3
MENTIONS_SHOWN = 10

FollowTarget = discord.TextChannel | discord.ForumChannel


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


def mode_text(mode: Mode, digest_hour: int) -> str:
    return "one post per paper" if mode == "each" else f"a daily digest at {digest_hour:02d}:00 UTC"


def mentions_text(channel_ids: Sequence[int]) -> str:
    shown = [f"<#{cid}>" for cid in channel_ids[:MENTIONS_SHOWN]]
    more = len(channel_ids) - len(shown)
    return human_join([*shown, f"{more} more"] if more else shown)


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
# Replies


def follow_message(
    *,
    topic: TopicRow,
    channel: FollowTarget,
    follow: Follow,
    is_new: bool,
    topic_note: str | None,
    momentum: Momentum,
    latest: Sequence[Paper],
) -> str:
    """The public announcement, which doubles as a preview: query, momentum and the latest matches."""
    name = safe_name(topic.name)
    how = mode_text(follow.mode, follow.digest_hour)
    head = (
        f"{channel.mention} now follows **{name}**."
        if is_new
        else (f"{channel.mention} already followed **{name}**: updated to {how}.")
    )
    top = [
        head,
        *([topic_note] if topic_note else []),
        code_block(topic.query),
        clip(momentum.sentence(), 400),
    ]
    tail = (
        f"Posts start with papers that arrive from now on (no flood of history), as {how}. "
        "Older papers: /latest."
    )
    lines = [paper_compact_line(p) for p in latest]
    while True:
        preview = ["**Latest matches**", *lines] if lines else ["No stored paper matches yet."]
        text = "\n".join([*top, *preview, tail])
        if len(text) <= CONTENT_LIMIT or not lines:
            return clip(text, CONTENT_LIMIT)
        lines.pop()  # a very long query leaves less room: show fewer papers rather than cut one


def follow_line(follow: Follow, tree: TopicTree | None = None, ratings: int = 0) -> str:
    """A follow, its topic shown where it sits in the tree ("RL Post-Training › GRPO"), and how many of this
    server's 👍 / 👎 its learned scorer learns from."""
    last = (
        f"last post {discord.utils.format_dt(follow.last_post_at, 'R')}"
        if follow.last_post_at
        else "no posts yet"
    )
    how = "each paper" if follow.mode == "each" else f"digest {follow.digest_hour:02d}:00 UTC"
    name = (tree.label(follow.topic_id) if tree is not None else "") or follow.topic_name
    receives = " · with suggestions" if follow.match == "suggested" else ""
    receives += f" · learns from {ratings} rating{'s' * (ratings != 1)}" if ratings else ""
    line = f"**{safe_name(name)}** → <#{follow.channel_id}> · {how}{receives} · {last}"
    if follow.broken_reason:
        reason = inert_markdown(clip(follow.broken_reason, 200))
        line += f"\n⚠️ broken: {reason}. Fix the channel's permissions, then /follow again."
    return line


def topics_embed(
    guild_name: str,
    follows: Sequence[Follow],
    tree: TopicTree | None = None,
    ratings: Mapping[int, int] | None = None,
) -> discord.Embed:
    counts = ratings or {}
    embed = discord.Embed(
        title=clip(f"Followed in {guild_name}", TITLE_LIMIT),
        description=fit_lines(
            [follow_line(f, tree, counts.get(f.topic_id, 0)) for f in follows], DESCRIPTION_LIMIT
        ),
    )
    broken = sum(f.broken for f in follows)
    count = f"{len(follows)} follow" + ("" if len(follows) == 1 else "s")
    footer = count + (f" · {broken} broken (see /status)" if broken else "")
    return embed.set_footer(text=footer)


INDENT = "\u2003"  # an em space: Discord keeps it at the start of a line, where it drops plain spaces
TREE_FOOTER = (
    "A paper of a topic belongs to every topic above it. Bold: followed here. Follow one with /follow "
    "topic:<name>; put this server's own topic under one with /follow topic:<yours> parent:<name>."
)


def tree_line(depth: int, topic: TopicRow, followed: bool, query_only: bool = False) -> str:
    name = safe_name(topic.name)
    marks = ("**" + name + "**" if followed else name) + ("" if topic.is_catalog else " · this server's")
    marks += " · query-only" if query_only else ""
    return INDENT * depth + ("└ " if depth else "") + marks


def tree_embed(
    tree: TopicTree,
    followed: set[int],
    budget: int = EMBED_TOTAL_LIMIT,
    query_only: set[int] | frozenset[int] = frozenset(),
) -> discord.Embed:
    """The topics this server can follow, as the tree they form, within `budget` characters of embed text;
    those without a learned scorer (no suggestions) are marked query-only."""
    footer = TREE_FOOTER + (" " + QUERY_ONLY_NOTE if query_only else "")
    embed = discord.Embed(title="Topics").set_footer(text=footer)
    room = max(0, min(DESCRIPTION_LIMIT, budget - embed_size(embed)))
    lines = [
        tree_line(depth, topic, topic.id in followed, topic.id in query_only) for depth, topic in tree.rows
    ]
    embed.description = fit_lines(lines, room) or None
    return embed


QUERY_ONLY_NOTE = (
    "Query-only: too few papers for the learned scorer yet, so /follow match:suggested adds nothing there."
)


NO_FOLLOWS = (
    "This server follows no topics yet. Start with /follow topic:<name>: pick a topic from the list, "
    "or type a new name and give an arXiv query to create your own."
)


class HistoryReply:
    """Shows in a deferred /follow reply how far a long history match has come ("Matching history: 40%…"),
    edited in at each tenth, one edit at a time; a history matched in one batch shows nothing."""

    def __init__(self, interaction: discord.Interaction) -> None:
        self.interaction = interaction
        self.shown = -1
        self.edit: asyncio.Task[object] | None = None
        self.edited = False

    def progress(self, progress: HistoryProgress) -> None:
        tenth = int(progress.share * 10)
        if not 0 < progress.share < 1 or tenth <= self.shown or (self.edit and not self.edit.done()):
            return
        self.shown, self.edited = tenth, True
        text = matching_text(progress.share)
        self.edit = asyncio.create_task(self.interaction.edit_original_response(content=text))

    async def settled(self) -> None:
        if self.edit is not None:
            with contextlib.suppress(discord.HTTPException):  # a lost progress edit loses nothing
                await self.edit


def matching_text(share: float) -> str:
    return f"Matching history: {share:.0%}… (every stored paper is checked against the query)"


# ---------------------------------------------------------------------------------------------------------
# The cog


class FollowCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

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
        )
        if plan.guarded:
            require_may_change_topic(member, plan.topic_name, plan.guarded, target.guild)
        await interaction.response.defer(thinking=True)  # history matching and momentum take a while

        shown = HistoryReply(interaction)
        done = await use.follows.follow(plan, shown.progress)
        await shown.settled()
        guild_id = guild_id_of(interaction)
        text = follow_message(
            topic=done.topic,
            channel=target,
            follow=done.follow,
            is_new=done.is_new,
            topic_note=_topic_note(done),
            momentum=await use.momentum.topic(done.topic, guild_id=guild_id),
            latest=await use.history.latest(done.topic, PREVIEW_PAPERS, guild_id),
        )
        if shown.edited:  # the reply shows the progress: it becomes the answer
            await interaction.edit_original_response(content=text)
        else:
            await interaction.followup.send(text)

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


def _topic_note(done: Followed) -> str | None:
    papers = "1 stored paper matches" if done.matched == 1 else f"{done.matched:,} stored papers match"
    name = safe_name(done.topic.name)
    under = f" under **{safe_name(done.parent.name)}**" if done.parent is not None else ""
    counts = (
        f" Its papers count for **{safe_name(done.parent.name)}** too"
        + (" in this server only." if done.parent.is_catalog else ".")
        if done.parent is not None
        else ""
    )
    if done.created_topic:
        return f"Created this server's topic **{name}**{under}: {papers}.{counts}"
    if done.changed_query:
        moved = f" and put it{under or ' at the top'}" if done.moved else ""
        return f"Changed the query of **{name}**{moved}; its history was matched again: {papers}.{counts}"
    if done.moved:
        return f"Put **{name}**{under or ' at the top of the tree'}: {papers}.{counts}"
    return None


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(FollowCog(bot))

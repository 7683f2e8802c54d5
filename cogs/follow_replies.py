"""What /follow and /topics say: the follow announcement (a preview of the topic), the list of a server's follows
and the tree of topics, each within Discord's limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import discord

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
from bot.services.follows import Followed
from bot.services.topics import TopicTree

MENTIONS_SHOWN = 10
MOMENTUM_LIMIT = 400  # the momentum sentence in a follow announcement
MOMENTUM_FLOOR = 60  # ... and the least of it kept when a long query takes the room
FollowTarget = discord.TextChannel | discord.ForumChannel


def mode_text(mode: Mode, digest_hour: int) -> str:
    return "one post per paper" if mode == "each" else f"a daily digest at {digest_hour:02d}:00 UTC"


def mentions_text(channel_ids: Sequence[int]) -> str:
    shown = [f"<#{cid}>" for cid in channel_ids[:MENTIONS_SHOWN]]
    more = len(channel_ids) - len(shown)
    return human_join([*shown, f"{more} more"] if more else shown)


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
    tail = (
        f"Posts start with papers that arrive from now on (no flood of history), as {how}. "
        "Older papers: /latest."
    )
    # a catalog query may take most of the message: never say "no match" when matches only lack room
    none = "Its latest matches: /latest." if latest else "No stored paper matches yet."
    fixed = [head, *([topic_note] if topic_note else []), code_block(topic.query)]
    # the query is shown whole; one near the catalog's bound leaves the momentum sentence what remains
    room = CONTENT_LIMIT - len("\n".join([*fixed, "", none, tail]))
    top = [*fixed, clip(momentum.sentence(), max(MOMENTUM_FLOOR, min(MOMENTUM_LIMIT, room)))]
    lines = [paper_compact_line(p) for p in latest]
    while True:
        preview = ["**Latest matches**", *lines] if lines else [none]
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


def topic_note(done: Followed, share: float = 0.0) -> str | None:
    papers = "1 stored paper matches" if done.matched == 1 else f"{done.matched:,} stored papers match"
    if done.matching is not None:
        papers = (
            f"matching its history in the background: {share:.0%}… (/status shows how far; its counts "
            "below are low until then)"
        )
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

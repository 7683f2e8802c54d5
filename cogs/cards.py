"""The card's buttons (👍 / 👎, ⭐ Save, Similar) and a digest's menus, as persistent dynamic items: their custom
ids carry the action and the paper (bot/render/actions.py), so a click on a card posted before a restart works
and nothing is kept per message. Every click is answered privately. Also /ratings, for a server's admins."""

from __future__ import annotations

import logging
import re
from typing import Any, cast

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.errors import PaperwatchError
from bot.interaction_errors import GENERIC, reply
from bot.models import RatedPaper, TopicRow, Vote
from bot.render import (
    CARD_ACTION,
    CONTENT_LIMIT,
    DIGEST_ACTION,
    ActionKind,
    action_button,
    paper_compact_line,
)
from bot.services.ratings import RateOutcome
from bot.services.similar import SimilarPapers
from bot.services.topics import MAX_NAME_LENGTH
from cogs.common import guild_id_of, resolve_topic, services, topic_autocomplete
from cogs.pagination import Page, inline_text, pack_lines, send_pages

log = logging.getLogger(__name__)

_VOTES: dict[str, Vote] = {"up": 1, "down": -1}
RATED_PER_PAGE = 10


def _channels(interaction: discord.Interaction) -> list[int]:
    """The card's channel and, for a forum post or thread, the channel it belongs to."""
    ids = [interaction.channel_id] if interaction.channel_id is not None else []
    parent = getattr(interaction.channel, "parent_id", None)
    return [*ids, parent] if isinstance(parent, int) else ids


def _names(topics: tuple[TopicRow, ...]) -> str:
    return ", ".join(f"**{inline_text(t.name, MAX_NAME_LENGTH)}**" for t in topics)


def rated_text(outcome: RateOutcome) -> str:
    mark = "👍" if outcome.vote > 0 else "👎"
    verdict = "belongs in" if outcome.vote > 0 else "does not belong in"
    names = _names(outcome.topics)
    if outcome.unchanged:
        return f"{mark} Already recorded: you said this paper {verdict} {names}."
    changed = "Changed your rating" if any(e is not None for e in outcome.earlier) else "Thanks"
    return (
        f"{mark} {changed}: this paper {verdict} {names}. This server's ratings teach the topic at its next "
        "retraining (daily), for this server only; an admin sees them with /ratings show."
    )


def similar_text(found: SimilarPapers) -> str:
    head = f"**Similar to** {paper_compact_line(found.paper)}"
    if not found.nearest:
        return f"{head}\nNo stored paper shares enough with this one yet."
    lines = [f"{i}. {paper_compact_line(p)}" for i, (p, _) in enumerate(found.nearest, start=1)]
    return pack_lines(head, lines, per_page=len(lines), limit=CONTENT_LIMIT)[0]


async def act(interaction: discord.Interaction, kind: ActionKind, arxiv_id: str, topic_id: int) -> None:
    """Carry out a click, answering privately; what a user can act on gets its message, a bug a generic one
    and a logged traceback."""
    use = services(interaction)
    try:
        if kind == "similar":
            await interaction.response.defer(ephemeral=True, thinking=True)
            found = await use.similar.similar(arxiv_id)
            await interaction.followup.send(similar_text(found), ephemeral=True)
        elif kind == "save":
            new = await use.saved.save(interaction.user.id, arxiv_id)
            text = (
                "⭐ Saved to your reading list: /saved list shows it, /saved export gives BibTeX."
                if new
                else "⭐ Already on your reading list (/saved list)."
            )
            await interaction.response.send_message(text, ephemeral=True)
        else:
            outcome = await use.ratings.rate(
                guild_id=guild_id_of(interaction),
                channel_ids=_channels(interaction),
                member_id=interaction.user.id,
                arxiv_id=arxiv_id,
                vote=_VOTES[kind],
                topic_id=topic_id,
            )
            await interaction.response.send_message(rated_text(outcome), ephemeral=True)
    except PaperwatchError as exc:
        await reply(interaction, str(exc))
    except Exception:
        log.exception(
            "card action %s on %s failed (guild %s, channel %s, user %s)",
            kind,
            arxiv_id,
            interaction.guild_id,
            interaction.channel_id,
            interaction.user.id,
        )
        await reply(interaction, GENERIC)


class CardButton(discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=CARD_ACTION):
    """A card's 👍 / 👎 / ⭐ Save / Similar button, rebuilt from its custom id at each click."""

    def __init__(self, kind: ActionKind, topic_id: int, arxiv_id: str) -> None:
        super().__init__(action_button(kind, arxiv_id, topic_id))
        self.kind: ActionKind = kind
        self.topic_id = topic_id
        self.arxiv_id = arxiv_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> CardButton:
        return cls(cast(ActionKind, match["kind"]), int(match["topic"]), match["paper"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await act(interaction, self.kind, self.arxiv_id, self.topic_id)


class DigestPick(discord.ui.DynamicItem[discord.ui.Select[discord.ui.View]], template=DIGEST_ACTION):
    """A digest's menu for one action: the paper is the option chosen."""

    def __init__(self, kind: ActionKind, topic_id: int, select: discord.ui.Select[discord.ui.View]) -> None:
        super().__init__(select)
        self.kind: ActionKind = kind
        self.topic_id = topic_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> DigestPick:
        kind = cast(ActionKind, match["kind"])
        # The menu as the message holds it (its options are the digest's papers).
        select = item if isinstance(item, discord.ui.Select) else discord.ui.Select(custom_id=match.group(0))
        return cls(kind, int(match["topic"]), select)

    async def callback(self, interaction: discord.Interaction) -> None:
        values = self.item.values
        if not values:
            await reply(interaction, "Pick a paper from the menu.")
            return
        await act(interaction, self.kind, values[0], self.topic_id)


def _balance(rated: RatedPaper) -> str:
    """What the paper teaches the topic: belongs (+), does not (-), or nothing (members disagree evenly)."""
    return "+" if rated.net > 0 else "-" if rated.net < 0 else "="


def rated_pages(topic: TopicRow, rated: list[RatedPaper]) -> list[Page]:
    name = inline_text(topic.name, MAX_NAME_LENGTH)
    if not rated:
        return [Page(content=f"No one in this server has rated a paper for **{name}** yet.")]
    votes = sum(r.up + r.down for r in rated)
    header = (
        f"**Ratings of {name}** in this server: {votes} on {len(rated)} papers, last rated first. "
        "/ratings reset forgets them."
    )
    entries = [
        f"{_balance(r)} 👍 {r.up} 👎 {r.down} · "
        f"[{inline_text(r.title, 120)}](<https://arxiv.org/abs/{r.arxiv_id}>) · arXiv:{r.arxiv_id}"
        for r in rated
    ]
    return [Page(content=text) for text in pack_lines(header, entries, per_page=RATED_PER_PAGE)]


def _require_manage_server(interaction: discord.Interaction) -> None:
    """Discord hides the group from members without the permission by default; a server may show it to
    others, so it is checked here too."""
    user = interaction.user
    if not isinstance(user, discord.Member) or not user.guild_permissions.manage_guild:
        raise PaperwatchError("Seeing or resetting a topic's ratings needs the Manage Server permission.")


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class RatingsGroup(
    app_commands.Group, name="ratings", description="What this server's 👍 / 👎 teach a topic"
):
    @app_commands.command(name="show", description="The papers this server rated for a topic")
    @app_commands.describe(topic="The topic")
    @app_commands.autocomplete(topic=topic_autocomplete)
    async def show(
        self, interaction: discord.Interaction, topic: app_commands.Range[str, 1, MAX_NAME_LENGTH]
    ) -> None:
        _require_manage_server(interaction)
        row = await resolve_topic(interaction, topic)
        rated = await services(interaction).ratings.rated(guild_id_of(interaction), row)
        await send_pages(interaction, rated_pages(row, rated), ephemeral=True)

    @app_commands.command(name="reset", description="Forget this server's ratings of a topic")
    @app_commands.describe(topic="The topic")
    @app_commands.autocomplete(topic=topic_autocomplete)
    async def reset(
        self, interaction: discord.Interaction, topic: app_commands.Range[str, 1, MAX_NAME_LENGTH]
    ) -> None:
        _require_manage_server(interaction)
        row = await resolve_topic(interaction, topic)
        gone = await services(interaction).ratings.reset(guild_id_of(interaction), row)
        name = inline_text(row.name, MAX_NAME_LENGTH)
        text = (
            f"Forgot {gone} rating{'s' * (gone != 1)} of **{name}**: its next retraining learns without them."
            if gone
            else f"This server holds no ratings of **{name}**."
        )
        await interaction.response.send_message(text, ephemeral=True)


class CardsCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot


async def setup(bot: PaperBot) -> None:
    bot.add_dynamic_items(CardButton, DigestPick)
    bot.tree.add_command(RatingsGroup())
    await bot.add_cog(CardsCog(bot))

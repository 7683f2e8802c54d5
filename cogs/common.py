"""Pieces every cog shares: topic autocomplete and lookup, scoped to the server asking."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.errors import PaperwatchError
from bot.store import TopicRow
from bot.store.topics import fold_name

if TYPE_CHECKING:
    from bot.app import PaperBot

MAX_CHOICES = 25  # Discord's limit for autocomplete


class UnknownTopic(PaperwatchError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"There is no topic named “{name[:80]}”. Start typing and pick one from the list, or create your own "
            "with /follow topic:<new name> query:<arXiv query>."
        )


def paperbot(interaction: discord.Interaction) -> PaperBot:
    return interaction.client  # type: ignore[return-value]


def guild_id_of(interaction: discord.Interaction) -> int:
    if interaction.guild_id is None:
        raise PaperwatchError("This command works in a server, not in direct messages.")
    return interaction.guild_id


async def resolve_topic(bot: PaperBot, guild_id: int, name: str) -> TopicRow:
    """The server's own topic of that name or slug, else the catalog's; UnknownTopic otherwise."""
    topic = await bot.ctx.topics.find(guild_id, name)
    if topic is None:
        raise UnknownTopic(name)
    return topic


async def topic_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    """Catalog topics and this server's own (which hide a catalog topic of the same name), the ones containing
    what was typed first by where it appears."""
    if interaction.guild_id is None:
        return []
    topics = await paperbot(interaction).ctx.topics.visible_to(interaction.guild_id)
    typed = fold_name(current)
    scored = []
    for topic in topics:
        where = fold_name(topic.name).find(typed) if typed else 0
        if where < 0 and typed in topic.slug:
            where = 100
        if where >= 0:
            scored.append((where, not topic.is_catalog, topic.name))
    scored.sort()
    return [app_commands.Choice(name=name[:100], value=name[:100]) for _, _, name in scored[:MAX_CHOICES]]

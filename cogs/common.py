"""Pieces every cog shares: the services, the server asking, topic lookup and autocomplete scoped to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.errors import PaperwatchError
from bot.models import TopicRow
from bot.services import Services

if TYPE_CHECKING:
    from bot.app import PaperBot


def paperbot(interaction: discord.Interaction) -> PaperBot:
    return interaction.client  # type: ignore[return-value]


def services(interaction: discord.Interaction) -> Services:
    return paperbot(interaction).services


def guild_id_of(interaction: discord.Interaction) -> int:
    if interaction.guild_id is None:
        raise PaperwatchError("This command works in a server, not in direct messages.")
    return interaction.guild_id


async def resolve_topic(interaction: discord.Interaction, name: str) -> TopicRow:
    """The server's own topic of that name or slug, else the catalog's; UnknownTopic otherwise."""
    return await services(interaction).topics.resolve(guild_id_of(interaction), name)


async def topic_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    """Catalog topics and this server's own (which hide a catalog topic of the same name) shown where they sit
    in the tree ("RL Post-Training › On-Policy Distillation"), the ones containing what was typed first by
    where it appears; choosing one gives its name."""
    if interaction.guild_id is None:
        return []
    found = await services(interaction).topics.suggest(interaction.guild_id, current)
    return [app_commands.Choice(name=label, value=name[:100]) for label, name in found]

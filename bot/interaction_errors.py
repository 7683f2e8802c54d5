"""One error handler for every slash command: what a user can fix gets a clear ephemeral message; anything
else gets a generic one and a logged traceback with the guild and command."""

from __future__ import annotations

import contextlib
import logging

import discord
from discord import app_commands

from bot.errors import PaperwatchError
from bot.render import CONTENT_LIMIT, clip
from bot.topics.query import QuerySyntaxError

log = logging.getLogger(__name__)
GENERIC = "Something went wrong on our side. It has been logged; please try again in a minute."


def message_for(error: app_commands.AppCommandError) -> str | None:
    """The message for an error the user can act on, or None for a bug."""
    cause = error.original if isinstance(error, app_commands.CommandInvokeError) else error
    if isinstance(cause, QuerySyntaxError):
        return f"That query does not parse: {cause}\n```\n{cause.pointer()}\n```"
    if isinstance(cause, PaperwatchError):
        return str(cause)
    if isinstance(error, app_commands.MissingPermissions):
        needed = ", ".join(p.replace("_", " ").title() for p in error.missing_permissions)
        return f"You need the {needed} permission for this command."
    if isinstance(error, app_commands.NoPrivateMessage):
        return "This command works in a server, not in direct messages."
    if isinstance(error, app_commands.CommandOnCooldown):
        return f"Slow down a little: try again in {error.retry_after:.0f} s."
    if isinstance(error, app_commands.TransformerError):
        return f"{error.value!r} is not a valid {error.type.name.lower()} here."
    if isinstance(error, app_commands.CheckFailure):
        return str(error) or "You cannot use this command here."
    return None


async def on_app_command_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
    text = message_for(error)
    if text is None:
        command = interaction.command.qualified_name if interaction.command else "?"
        log.error(
            "command /%s failed (guild %s, channel %s, user %s)",
            command,
            interaction.guild_id,
            interaction.channel_id,
            interaction.user.id if interaction.user else "?",
            exc_info=error,
        )
        text = GENERIC
    await reply(interaction, clip(text, CONTENT_LIMIT))


async def reply(interaction: discord.Interaction, text: str) -> None:
    """An ephemeral answer, whether or not the interaction was answered or deferred already."""
    try:
        if not interaction.response.is_done():
            await interaction.response.send_message(text, ephemeral=True)
            return
        if interaction.response.type is discord.InteractionResponseType.deferred_channel_message:
            # The first follow-up would fill the "thinking" message, public if the deferral was: remove it, so
            # the error reaches only the person who asked.
            with contextlib.suppress(discord.HTTPException):
                await interaction.delete_original_response()
        await interaction.followup.send(text, ephemeral=True)
    except discord.HTTPException:
        log.warning("could not tell the user about an error (interaction %s)", interaction.id)

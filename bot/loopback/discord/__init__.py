"""A loopback fake Discord (REST subset + JSON gateway) that the *real* discord.py client talks to.

Everything discord.py 2.7.1 needs (see shared/notes/discord-testing.md) is served from one aiohttp app on
127.0.0.1: login, the gateway handshake with RESUME and replay, slash-command sync, interactions with
callbacks and follow-ups, channel messages (JSON and multipart) and forum posts. A `check` given at
construction (the tests pass Discord's OpenAPI schema and documented limits) sees every request; problems land
in `violations`, which tests assert to be empty. Faults (429/5xx/403/404), rate limits and gateway closes are switchable at run
time, so retry and resume paths of the bot run against the same code that talks to Discord.

Interaction replies and follow-ups live on the `Interaction` record, not in `messages(channel_id)`, which
holds only what the bot posted through `POST /channels/{id}/messages` or as forum starter messages.
"""

from bot.loopback.discord.client import pointing_discord_at, running_client
from bot.loopback.discord.records import (
    ALL_PERMISSIONS,
    EPHEMERAL,
    LOADING,
    MANAGE_GUILD,
    VIEW_CHANNEL,
    Channel,
    Guild,
    Interaction,
    Member,
    RecordedRequest,
    RequestCheck,
)
from bot.loopback.discord.server import LoopbackDiscord

__all__ = [
    "ALL_PERMISSIONS",
    "EPHEMERAL",
    "LOADING",
    "MANAGE_GUILD",
    "VIEW_CHANNEL",
    "Channel",
    "Guild",
    "Interaction",
    "LoopbackDiscord",
    "Member",
    "RecordedRequest",
    "RequestCheck",
    "pointing_discord_at",
    "running_client",
]

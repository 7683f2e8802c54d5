"""What the loopback Discord holds and records: permission bits, guilds, channels, members, requests and
interactions."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from bot.loopback.discord.world import World

# What a test checks every request against, beyond the routes (e.g. Discord's OpenAPI schema): it may name
# the request's operation (`record.operation`) and returns the violations found, each failing the request.
RequestCheck = Callable[["RecordedRequest"], list[str]]

API_PREFIX = "/api/v10"
DISCORD_EPOCH_MS = 1_420_070_400_000
ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024

# Permission bits (https://discord.com/developers/docs/topics/permissions).
ADMINISTRATOR = 1 << 3
MANAGE_GUILD = 1 << 5
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
USE_APPLICATION_COMMANDS = 1 << 31
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
# Everything but ADMINISTRATOR, which would bypass the channel overwrites tests rely on.
ALL_PERMISSIONS = ((1 << 51) - 1) & ~ADMINISTRATOR

INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_MESSAGES = 1 << 9

EPHEMERAL = 1 << 6
LOADING = 1 << 7

TEXT_CHANNEL, PUBLIC_THREAD, FORUM_CHANNEL = 0, 11, 15
# Callback types valid per interaction type (ping, command, component, autocomplete, modal submit).
_VALID_CALLBACKS = {1: {1}, 2: {4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}, 5: {4, 5, 6, 7}}
_PY_OPTION_TYPES = {bool: 5, int: 4, float: 10, str: 3}


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py only parses bodies whose Content-Type is exactly "application/json" (no charset).
    return web.Response(
        status=status, body=json.dumps(body).encode(), content_type="application/json", headers=headers
    )


# ----------------------------------------------------------------------------------------------------------
# World model


@dataclass
class Member:
    id: int
    name: str
    guild_id: int
    permissions: int
    role_id: int
    bot: bool = False

    def user_payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "username": self.name,
            "discriminator": "0",
            "global_name": None,
            "avatar": None,
            "bot": self.bot,
            "public_flags": 0,
            "flags": 0,
            "primary_guild": None,
        }

    def member_payload(self) -> dict[str, Any]:
        return {
            "user": self.user_payload(),
            "roles": [str(self.role_id)],
            "nick": None,
            "avatar": None,
            "joined_at": "2024-01-01T00:00:00+00:00",
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "communication_disabled_until": None,
        }


@dataclass
class Channel:
    id: int
    guild_id: int
    name: str
    type: int
    position: int
    tags: list[dict[str, Any]] = field(default_factory=list)
    bot_permissions: int = ALL_PERMISSIONS
    parent_id: int | None = None
    owner_id: int | None = None
    applied_tags: list[str] = field(default_factory=list)
    deleted: bool = False

    @property
    def is_thread(self) -> bool:
        return self.type in (10, 11, 12)


@dataclass
class Guild:
    id: int
    name: str
    owner_id: int
    channels: list[Channel] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)


@dataclass
class RecordedFile:
    field: str
    filename: str
    content_type: str | None
    data: bytes


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the /api/v10 prefix
    query: dict[str, str]
    json: Any  # JSON body, or multipart `payload_json`
    files: list[RecordedFile]
    headers: dict[str, str]
    status: int = 0
    operation: str | None = None  # the spec's operationId


@dataclass
class Interaction:
    """One interaction the fake sent, and everything the bot answered to it."""

    id: int
    token: str
    type: int
    command: str
    payload: dict[str, Any]
    dispatched_at: float
    fake: World = field(repr=False)
    responses: list[dict[str, Any]] = field(default_factory=list)  # callback bodies as sent
    followups: list[dict[str, Any]] = field(default_factory=list)  # follow-up webhook bodies as sent
    edits: list[dict[str, Any]] = field(default_factory=list)  # PATCH bodies (original and follow-ups)
    original: dict[str, Any] | None = None  # the original response message, as currently edited
    followup_messages: list[dict[str, Any]] = field(default_factory=list)
    choices: list[dict[str, Any]] | None = None  # autocomplete answer

    @property
    def callback_type(self) -> int | None:
        return self.responses[0].get("type") if self.responses else None

    async def wait_response(self) -> dict[str, Any]:
        await self.fake.wait_for(lambda: bool(self.responses))
        return self.responses[0]

    async def wait_followups(self, count: int = 1) -> list[dict[str, Any]]:
        await self.fake.wait_for(lambda: len(self.followup_messages) >= count)
        return self.followup_messages

    async def wait_original(
        self, predicate: Callable[[dict[str, Any]], bool] = lambda m: True
    ) -> dict[str, Any]:
        await self.fake.wait_for(lambda: self.original is not None and predicate(self.original))
        assert self.original is not None
        return self.original


@dataclass
class _Fault:
    pattern: re.Pattern[str]
    method: str | None
    status: int
    remaining: int
    retry_after: float
    global_: bool
    applied: bool


@dataclass
class _Bucket:
    count: int
    reset_at: float


class ApiError(Exception):
    """Ends a request with a Discord-style error body; `violation` marks a bot bug worth failing on."""

    def __init__(self, status: int, code: int, message: str, violation: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.violation = status, code, message, violation


@dataclass
class _Ctx:
    request: web.Request
    record: RecordedRequest
    params: dict[str, str]
    body: Any
    files: dict[int, RecordedFile]


@dataclass
class _Route:
    method: str
    template: str
    pattern: re.Pattern[str]
    handler: Callable[[_Ctx], Awaitable[web.StreamResponse]]
    bot_auth: bool


def _template_regex(template: str) -> re.Pattern[str]:
    out = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    return re.compile(out)


def _pattern_regex(pattern: str) -> tuple[str | None, re.Pattern[str]]:
    """`"POST /channels/{id}/messages"` or `"/channels/*/messages"` -> (method, path regex)."""
    method, _, path = pattern.partition(" ") if " " in pattern else ("", "", pattern)
    regex = re.escape(path)
    regex = re.sub(r"\\\{[^}]*\\\}", "[^/]+", regex).replace(r"\*", ".*")
    return (method.upper() or None), re.compile(regex)


# ----------------------------------------------------------------------------------------------------------
# The server

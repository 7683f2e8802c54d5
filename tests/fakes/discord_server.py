"""A loopback fake Discord (REST subset + JSON gateway) that the *real* discord.py client talks to.

Everything discord.py 2.7.1 needs (see shared/notes/discord-testing.md) is served from one aiohttp app on
127.0.0.1: login, the gateway handshake with RESUME and replay, slash-command sync, interactions with
callbacks and follow-ups, channel messages (JSON and multipart) and forum posts. Every request body is
checked against Discord's OpenAPI spec and the documented limits; problems land in `violations`, which
tests assert to be empty. Faults (429/5xx/403/404), rate limits and gateway closes are switchable at run
time, so retry and resume paths of the bot run against the same code that talks to Discord.

Interaction replies and follow-ups live on the `Interaction` record, not in `messages(channel_id)`, which
holds only what the bot posted through `POST /channels/{id}/messages` or as forum starter messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import itertools
import json
import math
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yarl
from aiohttp import BodyPartReader, WSMsgType, web

from tests.fakes.openapi_validator import OpenAPIValidator, limit_violations

if TYPE_CHECKING:
    import discord

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
    fake: FakeDiscord = field(repr=False)
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


class FakeDiscord:
    """Loopback Discord: start it, point discord.py at it (`pointing_discord_at`), drive and observe."""

    def __init__(
        self,
        *,
        heartbeat_interval_ms: int = 1000,
        interaction_deadline: float = 3.0,
        timeout: float = 10.0,
        validator: OpenAPIValidator | None = None,
    ) -> None:
        self.token = "fake." + secrets.token_urlsafe(24)
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.interaction_deadline = interaction_deadline
        self.timeout = timeout  # default bound of every wait helper
        self.validator = validator or _shared_validator()
        self._ids = itertools.count()
        self.application_id = self._snowflake()
        self.bot_user_id = self.application_id  # as for every bot created since 2019
        self.owner_user_id = self._snowflake()
        self.guilds: list[Guild] = []
        self.commands: list[dict[str, Any]] = []
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.interactions: list[Interaction] = []
        self.gateway_log: list[tuple[Any, ...]] = []
        self._channels: dict[int, Channel] = {}
        self._members: dict[int, Member] = {}
        self._messages: dict[int, list[dict[str, Any]]] = {}
        self._threads: dict[int, list[dict[str, Any]]] = {}
        self._nonces: dict[tuple[int, int, str], dict[str, Any]] = {}
        self._files: dict[int, RecordedFile] = {}
        self._faults: list[_Fault] = []
        self._per_channel_limit: tuple[int, float] | None = None
        self._global_per_second: int | None = None
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._global_window = _Bucket(0, 0.0)
        self._waiters: set[asyncio.Future[None]] = set()
        self._routes = self._build_routes()
        # Gateway session: every dispatch is kept so a RESUME can replay what the client missed.
        self.session_id: str | None = None
        self._intents = 0
        self._events: list[dict[str, Any]] = []
        self._sent_seq = 0
        self._live_ws: web.WebSocketResponse | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._wake_sender = asyncio.Event()
        self._gate_open = asyncio.Event()
        self._gate_open.set()
        self._runner: web.AppRunner | None = None
        self._sender: asyncio.Task[None] | None = None
        self.port = 0

    # ---- lifecycle ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/api/{tail:.*}", self._handle_rest)
        app.router.add_get("/gateway", self._handle_gateway)
        app.router.add_get("/gateway/resume", self._handle_gateway)
        app.router.add_get("/attachments/{attachment_id}/{filename}", self._handle_attachment)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self._sender = asyncio.create_task(self._send_loop(), name="fake-discord-gateway-sender")

    async def stop(self) -> None:
        self._gate_open.set()
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        for ws in list(self._sockets):
            await ws.close(code=1001, message=b"fake discord stopping")
        if self._runner is not None:
            await self._runner.cleanup()
        for waiter in self._waiters:
            waiter.cancel()

    async def __aenter__(self) -> FakeDiscord:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return self.base_url + API_PREFIX

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    @property
    def resume_gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway/resume"

    # ---- ids, waiting ------------------------------------------------------------------------------------

    def _snowflake(self) -> int:
        """A snowflake for *now*: discord.py derives expiry times (interactions: +15 min) from it."""
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        return (ms << 22) | (next(self._ids) & 0x3FFFFF)

    def _notify(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Return once `predicate()` holds; re-checked on every state change, never by polling.

        `timeout` (default `self.timeout`) bounds a condition, not one awaited call, hence the parameter.
        """
        timeout = self.timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                while not predicate():
                    waiter = loop.create_future()
                    self._waiters.add(waiter)
                    try:
                        await waiter
                    finally:
                        self._waiters.discard(waiter)
        except TimeoutError:
            recent = [f"{r.method} {r.path} -> {r.status}" for r in self.requests[-5:]]
            raise TimeoutError(
                f"condition not met within {timeout}s; violations={self.violations}; last requests={recent}"
            ) from None

    # ---- world model -------------------------------------------------------------------------------------

    def add_guild(self, name: str) -> Guild:
        guild = Guild(self._snowflake(), name, self.owner_user_id)
        bot = Member(
            self.bot_user_id, "paperwatch-test", guild.id, ALL_PERMISSIONS, self._snowflake(), bot=True
        )
        guild.members.append(bot)
        self._members[bot.id] = bot
        self.guilds.append(guild)
        if self.session_id is not None:
            self._emit("GUILD_CREATE", self._guild_payload(guild))
        return guild

    def _add_channel(self, guild: Guild, name: str, type_: int, tags: list[dict[str, Any]]) -> Channel:
        channel = Channel(self._snowflake(), guild.id, name, type_, len(guild.channels), tags)
        guild.channels.append(channel)
        self._channels[channel.id] = channel
        if self.session_id is not None:
            self._emit("CHANNEL_CREATE", self._channel_payload(channel))
        return channel

    def add_text_channel(self, guild: Guild, name: str) -> Channel:
        return self._add_channel(guild, name, TEXT_CHANNEL, [])

    def add_forum_channel(self, guild: Guild, name: str, tags: tuple[str, ...] | list[str] = ()) -> Channel:
        tag_objs = [
            {
                "id": str(self._snowflake()),
                "name": tag,
                "moderated": False,
                "emoji_id": None,
                "emoji_name": None,
            }
            for tag in tags
        ]
        return self._add_channel(guild, name, FORUM_CHANNEL, tag_objs)

    def add_member(self, guild: Guild, name: str, *, permissions: int) -> Member:
        member = Member(self._snowflake(), name, guild.id, permissions, self._snowflake())
        guild.members.append(member)
        self._members[member.id] = member
        if self.session_id is not None:
            self._emit("GUILD_ROLE_CREATE", {"guild_id": str(guild.id), "role": self._role_payload(member)})
            self._emit(
                "GUILD_MEMBER_ADD",
                {**member.member_payload(), "guild_id": str(guild.id)},
                INTENT_GUILD_MEMBERS,
            )
        return member

    def set_bot_permissions(self, channel: Channel, permissions: int) -> None:
        """The bot's effective permissions in `channel` (as `app_permissions` and in its overwrites)."""
        channel.bot_permissions = permissions
        if self.session_id is not None:
            self._emit("CHANNEL_UPDATE", self._channel_payload(channel))

    def delete_channel(self, channel: Channel) -> None:
        channel.deleted = True
        if self.session_id is not None:
            self._emit("CHANNEL_DELETE", self._channel_payload(channel))

    def tag_id(self, forum: Channel, name: str) -> int:
        return next(int(t["id"]) for t in forum.tags if t["name"] == name)

    # ---- observations ------------------------------------------------------------------------------------

    def messages(self, channel_id: int) -> list[dict[str, Any]]:
        return list(self._messages.get(int(channel_id), []))

    def threads(self, forum_id: int) -> list[dict[str, Any]]:
        return list(self._threads.get(int(forum_id), []))

    def requests_to(self, method: str, pattern: str) -> list[RecordedRequest]:
        regex = _pattern_regex(pattern)[1]
        return [r for r in self.requests if r.method == method and regex.fullmatch(r.path)]

    @property
    def identify_count(self) -> int:
        return sum(1 for entry in self.gateway_log if entry[0] == "IDENTIFY")

    @property
    def resume_count(self) -> int:
        return sum(1 for entry in self.gateway_log if entry[0] == "RESUME")

    # ---- faults ------------------------------------------------------------------------------------------

    def fail_next(
        self,
        route_pattern: str,
        status: int,
        count: int = 1,
        *,
        retry_after: float = 0.05,
        global_: bool = False,
        applied: bool = False,
    ) -> None:
        """Answer the next `count` matching requests with `status`.

        `route_pattern` is a path (optionally prefixed by a method) with `{name}` or `*` wildcards, e.g.
        `"POST /channels/{id}/messages"`. With `applied=True` the request takes effect before the error is
        returned, like a response lost on the way back.
        """
        method, regex = _pattern_regex(route_pattern)
        self._faults.append(_Fault(regex, method, status, count, retry_after, global_, applied))

    def set_rate_limit(self, per_channel: tuple[int, float] | None, global_per_second: int | None) -> None:
        """`per_channel=(limit, window_seconds)` for channel routes; `global_per_second` for all bot requests."""
        self._per_channel_limit = per_channel
        self._global_per_second = global_per_second
        self._buckets.clear()

    def hold_gateway(self) -> None:
        """New gateway connections wait (before HELLO) until `release_gateway()`; dispatches queue up."""
        self._gate_open.clear()

    def release_gateway(self) -> None:
        self._gate_open.set()

    async def close_gateway(self, code: int = 4000) -> None:
        """Close the live gateway connection; for resumable codes the client must RESUME."""
        ws, self._live_ws = self._live_ws, None
        if ws is not None:
            self.gateway_log.append(("CLOSE", code))
            await ws.close(code=code, message=b"closed by the fake")

    async def request_reconnect(self) -> None:
        """Send op 7 RECONNECT: the client closes and resumes."""
        if self._live_ws is not None:
            await self._live_ws.send_str(json.dumps({"op": 7, "d": None, "s": None, "t": None}))

    # ---- payloads ----------------------------------------------------------------------------------------

    def _bot_user(self) -> dict[str, Any]:
        return self._members_by_id(self.bot_user_id).user_payload()

    def _members_by_id(self, member_id: int) -> Member:
        member = self._members.get(member_id)
        if member is None:  # the bot before any guild exists
            return Member(self.bot_user_id, "paperwatch-test", 0, ALL_PERMISSIONS, 0, bot=True)
        return member

    def _role_payload(self, member: Member) -> dict[str, Any]:
        return {
            "id": str(member.role_id),
            "name": f"{member.name}-role",
            "permissions": str(member.permissions),
            "position": 1,
            "color": 0,
            "hoist": False,
            "managed": member.bot,
            "mentionable": False,
            "flags": 0,
        }

    def _channel_payload(self, channel: Channel) -> dict[str, Any]:
        if channel.is_thread:
            return self._thread_payload(channel)
        payload: dict[str, Any] = {
            "id": str(channel.id),
            "type": channel.type,
            "name": channel.name,
            "position": channel.position,
            "guild_id": str(channel.guild_id),
            "parent_id": None,
            "topic": None,
            "nsfw": False,
            "rate_limit_per_user": 0,
            "last_message_id": None,
            "flags": 0,
            "permission_overwrites": self._overwrites(channel),
        }
        if channel.type == FORUM_CHANNEL:
            payload |= {
                "available_tags": channel.tags,
                "default_reaction_emoji": None,
                "default_sort_order": None,
                "default_forum_layout": 0,
                "default_thread_rate_limit_per_user": 0,
            }
        return payload

    def _overwrites(self, channel: Channel) -> list[dict[str, Any]]:
        denied = ALL_PERMISSIONS & ~channel.bot_permissions
        if not denied:
            return []
        return [{"id": str(self.bot_user_id), "type": 1, "allow": "0", "deny": str(denied)}]

    def _thread_payload(self, thread: Channel) -> dict[str, Any]:
        return {
            "id": str(thread.id),
            "type": thread.type,
            "name": thread.name,
            "guild_id": str(thread.guild_id),
            "parent_id": str(thread.parent_id),
            "owner_id": str(thread.owner_id),
            "flags": 0,
            "last_message_id": str(thread.id),
            "rate_limit_per_user": 0,
            "message_count": len(self._messages.get(thread.id, [])),
            "member_count": 1,
            "total_message_sent": len(self._messages.get(thread.id, [])),
            "applied_tags": thread.applied_tags,
            "thread_metadata": {
                "archived": False,
                "archive_timestamp": _now_iso(),
                "auto_archive_duration": 4320,
                "locked": False,
                "create_timestamp": _now_iso(),
            },
            "member": {
                "id": str(thread.id),
                "user_id": str(self.bot_user_id),
                "join_timestamp": _now_iso(),
                "flags": 0,
            },
        }

    def _guild_payload(self, guild: Guild) -> dict[str, Any]:
        everyone = {
            "id": str(guild.id),
            "name": "@everyone",
            "permissions": "0",
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }
        live = [c for c in guild.channels if not c.deleted]
        return {
            "id": str(guild.id),
            "name": guild.name,
            "owner_id": str(guild.owner_id),
            "unavailable": False,
            "member_count": len(guild.members),
            "large": False,
            "joined_at": _now_iso(),
            "channels": [self._channel_payload(c) for c in live if not c.is_thread],
            "threads": [self._thread_payload(c) for c in live if c.is_thread],
            "roles": [everyone] + [self._role_payload(m) for m in guild.members],
            "members": [m.member_payload() for m in guild.members],
            "emojis": [],
            "stickers": [],
            "features": [],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "preferred_locale": "en-US",
            "premium_tier": 0,
            "system_channel_flags": 0,
        }

    def _attachment(self, channel_id: int, file: RecordedFile, entry: dict[str, Any]) -> dict[str, Any]:
        attachment_id = self._snowflake()
        self._files[attachment_id] = file
        filename = entry.get("filename") or file.filename
        url = f"{self.base_url}/attachments/{attachment_id}/{filename}"
        out = {
            "id": str(attachment_id),
            "filename": filename,
            "size": len(file.data),
            "url": url,
            "proxy_url": url,
            "content_type": file.content_type or "application/octet-stream",
        }
        if entry.get("description"):
            out["description"] = entry["description"]
        return out

    def _attachments(
        self,
        channel_id: int,
        body: dict[str, Any],
        files: dict[int, RecordedFile],
        kept: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Attachment objects for a message body: `attachments[].id` indexes `files[n]` for new uploads."""
        out: list[dict[str, Any]] = []
        used: set[int] = set()
        existing = {a["id"]: a for a in kept or []}
        for entry in body.get("attachments") or []:
            key = str(entry.get("id"))
            if key in existing:
                out.append(existing[key])
                continue
            index = int(key) if key.isdigit() else -1
            if index not in files:
                raise ApiError(
                    400,
                    50035,
                    "Invalid Form Body",
                    f"attachments entry {entry!r} refers to files[{key}], which was not uploaded",
                )
            out.append(self._attachment(channel_id, files[index], entry))
            used.add(index)
        out.extend(self._attachment(channel_id, f, {}) for i, f in sorted(files.items()) if i not in used)
        return out

    def _message(
        self,
        channel_id: int,
        body: dict[str, Any],
        attachments: list[dict[str, Any]],
        *,
        flags: int = 0,
        interaction: Interaction | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "id": str(self._snowflake()),
            "type": 0,
            "channel_id": str(channel_id),
            "content": body.get("content") or "",
            "author": self._bot_user(),
            "timestamp": _now_iso(),
            "edited_timestamp": None,
            "tts": bool(body.get("tts")),
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": attachments,
            "embeds": [{"type": "rich", **e} for e in body.get("embeds") or []],
            "pinned": False,
            "flags": flags | (body.get("flags") or 0),
            "components": body.get("components") or [],
        }
        if body.get("nonce") is not None:
            message["nonce"] = body["nonce"]
        if interaction is not None:
            message |= {
                "type": 20,
                "webhook_id": str(self.application_id),
                "application_id": str(self.application_id),
                "interaction_metadata": {
                    "id": str(interaction.id),
                    "type": interaction.type,
                    "user": interaction.payload["member"]["user"],
                    "authorizing_integration_owners": interaction.payload["authorizing_integration_owners"],
                },
            }
        return message

    # ---- gateway -----------------------------------------------------------------------------------------

    def _emit(self, event: str, data: dict[str, Any], intent: int | None = None) -> None:
        """Queue a dispatch; the sender delivers it now if a session is live, else a RESUME replays it.

        Events gated by an intent bit are only sent when the client identified with that intent.
        """
        if intent is not None and not self._intents & intent:
            return
        self._events.append({"op": 0, "t": event, "s": len(self._events) + 1, "d": data})
        self._wake_sender.set()

    async def _send_loop(self) -> None:
        while True:
            await self._wake_sender.wait()
            self._wake_sender.clear()
            await self._flush()

    async def _flush(self) -> None:
        ws = self._live_ws
        while ws is not None and ws is self._live_ws and not ws.closed and self._sent_seq < len(self._events):
            event = self._events[self._sent_seq]
            try:
                await ws.send_str(json.dumps(event))
            except ConnectionError:
                return  # the client will RESUME from its last sequence
            self._sent_seq += 1
            self._notify()

    async def _handle_gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            await self._gate_open.wait()
            hello = {"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval_ms}, "s": None, "t": None}
            await ws.send_str(json.dumps(hello))
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    await self._on_gateway_frame(ws, request.path, json.loads(msg.data))
                elif msg.type == WSMsgType.BINARY:
                    self.violations.append("gateway: binary frame from the client (expected JSON text)")
        finally:
            self._sockets.discard(ws)
            if self._live_ws is ws:
                self._live_ws = None
            self._notify()
        return ws

    async def _on_gateway_frame(self, ws: web.WebSocketResponse, path: str, frame: dict[str, Any]) -> None:
        op, data = frame.get("op"), frame.get("d")
        if op == 1:
            await ws.send_str(json.dumps({"op": 11, "d": None, "s": None, "t": None}))
        elif op == 2:
            await self._identify(ws, data or {})
        elif op == 6:
            await self._resume(ws, path, data or {})
        elif op == 8:
            self._members_chunk(data or {})

    async def _identify(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        self.gateway_log.append(("IDENTIFY", data.get("intents")))
        self._intents = int(data.get("intents") or 0)
        self.session_id = uuid.uuid4().hex
        self._events, self._sent_seq, self._live_ws = [], 0, ws
        ready: dict[str, Any] = {
            "v": 10,
            "user": self._bot_user(),
            "session_id": self.session_id,
            "resume_gateway_url": self.resume_gateway_url,
            "session_type": "normal",
            "guilds": [{"id": str(g.id), "unavailable": True} for g in self.guilds],
            "application": {"id": str(self.application_id), "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "geo_ordered_rtc_regions": [],
        }
        if data.get("shard") is not None:
            ready["shard"] = data["shard"]
        self._emit("READY", ready)
        for guild in self.guilds:
            self._emit("GUILD_CREATE", self._guild_payload(guild))
        self._notify()

    async def _resume(self, ws: web.WebSocketResponse, path: str, data: dict[str, Any]) -> None:
        seq = data.get("seq") or 0
        if (
            data.get("token") != self.token
            or data.get("session_id") != self.session_id
            or seq > len(self._events)
        ):
            await ws.send_str(json.dumps({"op": 9, "d": False, "s": None, "t": None}))
            return
        self.gateway_log.append(("RESUME", seq, path))
        missed = [e["t"] for e in self._events[seq:]]
        if missed:
            self.gateway_log.append(("REPLAY", *missed))
        self._sent_seq, self._live_ws = seq, ws
        self._emit("RESUMED", {})
        self._notify()

    def _members_chunk(self, data: dict[str, Any]) -> None:
        guild = next((g for g in self.guilds if str(g.id) == str(data.get("guild_id"))), None)
        if guild is None:
            return
        query = (data.get("query") or "").lower()
        members = [m.member_payload() for m in guild.members if m.name.lower().startswith(query)]
        limit = data.get("limit") or len(members)
        self._emit(
            "GUILD_MEMBERS_CHUNK",
            {
                "guild_id": str(guild.id),
                "members": members[:limit],
                "chunk_index": 0,
                "chunk_count": 1,
                "nonce": data.get("nonce"),
                "not_found": [],
                "presences": [],
            },
        )

    # ---- driving the bot ---------------------------------------------------------------------------------

    def _find_command(self, name: str, guild_id: int) -> dict[str, Any]:
        scoped = [
            c for c in self.commands if c["name"] == name and c.get("guild_id") in (str(guild_id), None)
        ]
        if not scoped:
            raise LookupError(
                f"/{name} was never synced (fake.commands has {[c['name'] for c in self.commands]})"
            )
        return min(scoped, key=lambda c: c.get("guild_id") is None)  # guild commands shadow global ones

    def _option(
        self,
        given: dict[str, Any],
        defs: list[dict[str, Any]],
        resolved: dict[str, dict[str, Any]],
        guild: Guild,
    ) -> dict[str, Any]:
        spec = next((d for d in defs if d["name"] == given["name"]), None)
        value = given["value"]
        type_ = given.get("type") or (spec or {}).get("type") or _PY_OPTION_TYPES.get(type(value), 3)
        if isinstance(value, Channel):
            resolved.setdefault("channels", {})[str(value.id)] = {
                **self._channel_payload(value),
                "permissions": str(value.bot_permissions),
            }
            value = str(value.id)
        elif isinstance(value, Member):
            resolved.setdefault("users", {})[str(value.id)] = value.user_payload()
            member = {k: v for k, v in value.member_payload().items() if k != "user"}
            resolved.setdefault("members", {})[str(value.id)] = {
                **member,
                "permissions": str(value.permissions),
            }
            value = str(value.id)
        option = {"name": given["name"], "type": type_, "value": value}
        if given.get("focused"):
            option["focused"] = True
        return option

    def _command_data(self, guild: Guild, command: str, options: list[dict[str, Any]]) -> dict[str, Any]:
        root, *subs = command.split()
        spec = self._find_command(root, guild.id)
        data: dict[str, Any] = {"id": spec["id"], "name": root, "type": spec.get("type", 1)}
        if spec.get("guild_id"):
            data["guild_id"] = spec["guild_id"]
        node, defs = data, spec.get("options") or []
        for sub in subs:
            sub_spec = next((d for d in defs if d["name"] == sub and d["type"] in (1, 2)), None)
            if sub_spec is None:
                raise LookupError(f"/{command}: no subcommand {sub!r} in the synced definition")
            child: dict[str, Any] = {"name": sub, "type": sub_spec["type"]}
            node["options"] = [child]
            node, defs = child, sub_spec.get("options") or []
        resolved: dict[str, dict[str, Any]] = {}
        node["options"] = [self._option(o, defs, resolved, guild) for o in options]
        if resolved:
            data["resolved"] = resolved
        return data

    def _interaction(
        self,
        type_: int,
        guild: Guild,
        channel: Channel,
        member: Member,
        command: str,
        options: list[dict[str, Any]],
    ) -> Interaction:
        interaction_id = self._snowflake()
        token = "itok." + secrets.token_urlsafe(32)
        payload = {
            "id": str(interaction_id),
            "application_id": str(self.application_id),
            "type": type_,
            "token": token,
            "version": 1,
            "guild_id": str(guild.id),
            "guild": {"id": str(guild.id), "locale": "en-US", "features": []},
            "channel_id": str(channel.id),
            "channel": {**self._channel_payload(channel), "permissions": str(member.permissions)},
            "member": {**member.member_payload(), "permissions": str(member.permissions)},
            "app_permissions": str(channel.bot_permissions),
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(guild.id)},
            "context": 0,
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
            "data": self._command_data(guild, command, options),
        }
        record = Interaction(
            interaction_id, token, type_, command, payload, asyncio.get_running_loop().time(), self
        )
        self.interactions.append(record)
        self._emit("INTERACTION_CREATE", payload)
        return record

    async def _await_session(self) -> None:
        await self.wait_for(lambda: self.session_id is not None)

    async def invoke(
        self,
        guild: Guild,
        channel: Channel,
        member: Member,
        command: str,
        options: list[dict[str, Any]] | None = None,
    ) -> Interaction:
        """Send a slash command (type 2). `command` may name subcommands: "topics follow".

        Options are `{"name", "value"}` (type taken from the synced definition); a `Channel`/`Member` value
        becomes its id plus the `resolved` entry Discord sends. Returns at once; await the record's helpers.
        """
        await self._await_session()
        return self._interaction(2, guild, channel, member, command, options or [])

    async def autocomplete(
        self, guild: Guild, channel: Channel, member: Member, command: str, options: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Send an autocomplete interaction (type 4) and return the choices the bot answered.

        Exactly one option is focused: the one marked `focused: True`, else the last one.
        """
        await self._await_session()
        options = [dict(o) for o in options]
        if options and not any(o.get("focused") for o in options):
            options[-1]["focused"] = True
        record = self._interaction(4, guild, channel, member, command, options)
        await self.wait_for(lambda: record.choices is not None or bool(record.responses))
        if record.choices is None:
            raise AssertionError(f"autocomplete answered with {record.responses[0]!r}")
        return record.choices

    async def click(
        self, message: dict[str, Any], custom_id: str, member: Member, values: list[str] | None = None
    ) -> Interaction:
        """A member clicks a component of a message the bot sent (type 3, MESSAGE_COMPONENT): a button, or a
        select menu choosing `values`. The interaction's server is the member's (a member of another server
        clicking a card shown there, e.g. crossposted); its channel is the message's. Raises AssertionError
        when the message has no component with that custom_id. Returns at once; await the record's helpers."""
        await self._await_session()
        component = next(
            (
                c
                for row in message.get("components") or []
                for c in row.get("components") or []
                if c.get("custom_id") == custom_id
            ),
            None,
        )
        if component is None:
            raise AssertionError(f"message {message.get('id')} has no component {custom_id!r}")
        guild = next(g for g in self.guilds if g.id == member.guild_id)
        channel = self._channels[int(message["channel_id"])]
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component["type"]}
        if component["type"] != 2:
            data["values"] = list(values or [])
        interaction_id = self._snowflake()
        token = "itok." + secrets.token_urlsafe(32)
        payload = {
            "id": str(interaction_id),
            "application_id": str(self.application_id),
            "type": 3,
            "token": token,
            "version": 1,
            "guild_id": str(guild.id),
            "guild": {"id": str(guild.id), "locale": "en-US", "features": []},
            "channel_id": str(channel.id),
            "channel": {**self._channel_payload(channel), "permissions": str(member.permissions)},
            "member": {**member.member_payload(), "permissions": str(member.permissions)},
            "app_permissions": str(channel.bot_permissions),
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(guild.id)},
            "context": 0,
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
            "message": message,
            "data": data,
        }
        record = Interaction(
            interaction_id, token, 3, custom_id, payload, asyncio.get_running_loop().time(), self
        )
        self.interactions.append(record)
        self._emit("INTERACTION_CREATE", payload)
        return record

    # ---- REST plumbing -----------------------------------------------------------------------------------

    def _build_routes(self) -> list[_Route]:
        table: list[tuple[str, str, Callable[[_Ctx], Awaitable[web.StreamResponse]], bool]] = [
            ("GET", "/users/@me", self._get_me, True),
            ("GET", "/oauth2/applications/@me", self._get_application, True),
            ("GET", "/gateway", self._get_gateway, False),
            ("GET", "/gateway/bot", self._get_gateway_bot, True),
            ("PUT", "/applications/{application_id}/commands", self._put_commands, True),
            ("GET", "/applications/{application_id}/commands", self._get_commands, True),
            ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", self._put_commands, True),
            ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", self._get_commands, True),
            ("GET", "/channels/{channel_id}", self._get_channel, True),
            ("POST", "/channels/{channel_id}/messages", self._create_message, True),
            ("GET", "/channels/{channel_id}/messages", self._list_messages, True),
            ("POST", "/channels/{channel_id}/threads", self._create_thread, True),
            ("POST", "/interactions/{interaction_id}/{interaction_token}/callback", self._callback, False),
            ("POST", "/webhooks/{webhook_id}/{webhook_token}", self._followup, False),
        ]
        for method in ("GET", "PATCH", "DELETE"):
            for suffix in ("@original", "{message_id}"):
                table.append(
                    (
                        method,
                        f"/webhooks/{{webhook_id}}/{{webhook_token}}/messages/{suffix}",
                        self._webhook_message,
                        False,
                    )
                )
        # Literal segments first: "@original" must not be taken for a {message_id}.
        table.sort(key=lambda r: -sum(1 for p in r[1].split("/") if p and not p.startswith("{")))
        return [_Route(m, t, _template_regex(t), h, a) for m, t, h, a in table]

    async def _read_body(self, request: web.Request, record: RecordedRequest) -> dict[int, RecordedFile]:
        files: dict[int, RecordedFile] = {}
        if request.content_type == "multipart/form-data":
            reader = await request.multipart()
            async for part in reader:
                if not isinstance(part, BodyPartReader):  # nested multipart: not something Discord takes
                    continue
                name = part.name or ""
                if name == "payload_json":
                    record.json = json.loads(await part.text())
                elif m := re.fullmatch(r"files\[(\d+)\]", name):
                    data = bytes(await part.read(decode=False))
                    rec = RecordedFile(name, part.filename or name, part.headers.get("Content-Type"), data)
                    files[int(m.group(1))] = rec
                    record.files.append(rec)
                else:
                    self.violations.append(
                        f"{record.method} {record.path}: unexpected multipart field {name!r}"
                    )
        elif request.can_read_body:
            raw = await request.read()
            if raw:
                if request.content_type != "application/json":
                    self.violations.append(
                        f"{record.method} {record.path}: body sent as {request.content_type}"
                    )
                record.json = json.loads(raw)
        return files

    def _match(self, method: str, path: str) -> tuple[_Route, dict[str, str]] | None:
        for route in self._routes:
            if route.method == method and (m := route.pattern.fullmatch(path)):
                return route, m.groupdict()
        return None

    async def _handle_rest(self, request: web.Request) -> web.StreamResponse:
        raw_path = request.path
        path = raw_path[len(API_PREFIX) :] if raw_path.startswith(API_PREFIX + "/") else raw_path
        headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = "<present>" if "Authorization" in request.headers else "<absent>"
        record = RecordedRequest(request.method, path, dict(request.query), None, [], headers)
        self.requests.append(record)
        try:
            files = await self._read_body(request, record)
            response = await self._process(request, record, files, raw_path)
        except ApiError as err:
            response = self._api_error(record, err)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            response = self._api_error(
                record,
                ApiError(
                    400,
                    50109,
                    "The request body contains invalid JSON.",
                    f"{record.method} {path}: invalid JSON body ({err})",
                ),
            )
        except Exception as err:  # a bug in the fake: fail the test fast instead of a 500 the client retries
            response = self._api_error(
                record, ApiError(400, 0, "fake discord error", f"{record.method} {path}: fake raised {err!r}")
            )
        record.status = response.status
        self._notify()
        return response

    def _api_error(self, record: RecordedRequest, err: ApiError) -> web.Response:
        if err.violation:
            self.violations.append(err.violation)
        body: dict[str, Any] = {"message": err.message, "code": err.code}
        if err.status == 400 and err.code == 50035:
            body["errors"] = {}
        return _json_response(err.status, body)

    async def _process(
        self, request: web.Request, record: RecordedRequest, files: dict[int, RecordedFile], raw_path: str
    ) -> web.StreamResponse:
        matched = self._match(record.method, record.path) if raw_path.startswith(API_PREFIX + "/") else None
        if matched is None:
            raise ApiError(404, 0, "404: Not Found", f"unknown route {record.method} {raw_path}")
        route, params = matched
        if route.bot_auth and request.headers.get("Authorization") != f"Bot {self.token}":
            raise ApiError(401, 0, "401: Unauthorized")
        limited = self._global_limit() if route.bot_auth else None
        if limited is not None:
            return limited
        ctx = _Ctx(request, record, params, record.json, files)
        fault = self._take_fault(record)
        if fault is not None and not fault.applied:
            return self._fault_response(fault)
        rl_headers: dict[str, str] = {}
        if "channel_id" in params and self._per_channel_limit is not None:
            limited, rl_headers = self._channel_limit(route.template, params["channel_id"])
            if limited is not None:
                return limited
        self._validate(record, files)
        response = await route.handler(ctx)
        if fault is not None:
            return self._fault_response(fault)
        response.headers.update(rl_headers)
        return response

    def _validate(self, record: RecordedRequest, files: dict[int, RecordedFile]) -> None:
        op = self.validator.find_operation(record.method, record.path)
        if op is None:
            return
        record.operation = op.operation_id
        found = self.validator.schema_violations(op, record.json) + limit_violations(
            op.operation_id, record.json
        )
        found += [
            f"{op.operation_id}: {f.field} is {len(f.data)} bytes > {ATTACHMENT_SIZE_LIMIT}"
            for f in files.values()
            if len(f.data) > ATTACHMENT_SIZE_LIMIT
        ]
        if found:
            self.violations.extend(found)
            raise ApiError(400, 50035, "Invalid Form Body")

    def _take_fault(self, record: RecordedRequest) -> _Fault | None:
        for fault in self._faults:
            if fault.method not in (None, record.method) or not fault.pattern.fullmatch(record.path):
                continue
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.remove(fault)
            return fault
        return None

    def _fault_response(self, fault: _Fault) -> web.Response:
        if fault.status == 429:
            return self._rate_limited(fault.retry_after, global_=fault.global_)
        bodies = {
            401: {"message": "401: Unauthorized", "code": 0},
            403: {"message": "Missing Access", "code": 50001},
            404: {"message": "Unknown Channel", "code": 10003},
        }
        body = bodies.get(fault.status) or (
            {"message": "Internal Server Error", "code": 0}
            if fault.status >= 500
            else {"message": "Invalid Form Body", "code": 50035, "errors": {}}
        )
        return _json_response(fault.status, body)

    def _rate_limited(
        self, retry_after: float, *, global_: bool, extra: dict[str, str] | None = None
    ) -> web.Response:
        headers = {
            "Via": "1.1 google",
            "Retry-After": str(math.ceil(retry_after)),
            "X-RateLimit-Scope": "global" if global_ else "user",
            **(extra or {}),
        }
        if global_:
            headers["X-RateLimit-Global"] = "true"
        body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": global_}
        return _json_response(429, body, headers)

    def _global_limit(self) -> web.Response | None:
        if self._global_per_second is None:
            return None
        now = asyncio.get_running_loop().time()
        window = self._global_window
        if now >= window.reset_at:
            window.count, window.reset_at = 0, now + 1.0
        window.count += 1
        if window.count > self._global_per_second:
            return self._rate_limited(round(window.reset_at - now, 3), global_=True)
        return None

    def _channel_limit(self, template: str, channel_id: str) -> tuple[web.Response | None, dict[str, str]]:
        assert self._per_channel_limit is not None
        limit, period = self._per_channel_limit
        now = asyncio.get_running_loop().time()
        bucket = self._buckets.setdefault((template, channel_id), _Bucket(0, now + period))
        if now >= bucket.reset_at:
            bucket.count, bucket.reset_at = 0, now + period
        bucket.count += 1
        reset_after = max(bucket.reset_at - now, 0.0)
        headers = {
            "X-RateLimit-Bucket": hashlib.sha1(template.encode()).hexdigest()[:16],
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(limit - bucket.count, 0)),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        }
        if bucket.count > limit:
            return self._rate_limited(round(reset_after, 3), global_=False, extra=headers), headers
        return None, headers

    # ---- REST handlers: identity, commands, channels -----------------------------------------------------

    async def _get_me(self, ctx: _Ctx) -> web.Response:
        return _json_response(
            200,
            {**self._bot_user(), "verified": True, "mfa_enabled": False, "locale": "en-US", "email": None},
        )

    async def _get_application(self, ctx: _Ctx) -> web.Response:
        owner = {
            "id": str(self.owner_user_id),
            "username": "owner",
            "discriminator": "0",
            "avatar": None,
            "global_name": None,
            "public_flags": 0,
            "flags": 0,
        }
        return _json_response(
            200,
            {
                "id": str(self.application_id),
                "name": "paperwatch-test",
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": owner,
                "verify_key": "0" * 64,
                "flags": 0,
                "team": None,
                "summary": "",
                "bot": self._bot_user(),
            },
        )

    async def _get_gateway(self, ctx: _Ctx) -> web.Response:
        return _json_response(200, {"url": self.gateway_url})

    async def _get_gateway_bot(self, ctx: _Ctx) -> web.Response:
        limit = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}
        return _json_response(200, {"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    def _check_application(self, ctx: _Ctx) -> None:
        if ctx.params["application_id"] != str(self.application_id):
            raise ApiError(403, 50001, "Missing Access", f"{ctx.record.path}: not this bot's application id")

    async def _put_commands(self, ctx: _Ctx) -> web.Response:
        self._check_application(ctx)
        guild_id = ctx.params.get("guild_id")
        previous = {c["name"]: c for c in self.commands if c.get("guild_id") == guild_id}
        synced = []
        for body in ctx.body or []:
            old = previous.get(body["name"])
            command = {
                "type": 1,
                "description": "",
                "options": [],
                "default_member_permissions": None,
                "nsfw": False,
                **body,
                "id": old["id"] if old else str(self._snowflake()),
                "application_id": str(self.application_id),
                "version": str(self._snowflake()),
            }
            if guild_id is not None:
                command["guild_id"] = guild_id
            synced.append(command)
        self.commands = [c for c in self.commands if c.get("guild_id") != guild_id] + synced
        return _json_response(200, synced)

    async def _get_commands(self, ctx: _Ctx) -> web.Response:
        self._check_application(ctx)
        guild_id = ctx.params.get("guild_id")
        return _json_response(200, [c for c in self.commands if c.get("guild_id") == guild_id])

    def _channel(self, channel_id: str) -> Channel:
        channel = self._channels.get(int(channel_id)) if channel_id.isdigit() else None
        if channel is None or channel.deleted:
            raise ApiError(404, 10003, "Unknown Channel")
        return channel

    def _require(self, channel: Channel, permission: int) -> None:
        if not channel.bot_permissions & VIEW_CHANNEL:
            raise ApiError(403, 50001, "Missing Access")
        if not channel.bot_permissions & permission:
            raise ApiError(403, 50013, "Missing Permissions")

    async def _get_channel(self, ctx: _Ctx) -> web.Response:
        channel = self._channel(ctx.params["channel_id"])
        self._require(channel, VIEW_CHANNEL)
        return _json_response(200, self._channel_payload(channel))

    def _post_message(
        self, channel: Channel, body: dict[str, Any], files: dict[int, RecordedFile], where: str
    ) -> dict[str, Any]:
        """Permission rules, then the message: no EMBED_LINKS drops embeds (403 if nothing else is left)."""
        self._require(channel, SEND_MESSAGES_IN_THREADS if channel.is_thread else SEND_MESSAGES)
        if files and not channel.bot_permissions & ATTACH_FILES:
            raise ApiError(403, 50013, "Missing Permissions")
        body = dict(body)
        if body.get("embeds") and not channel.bot_permissions & EMBED_LINKS:
            if not (body.get("content") or files):
                raise ApiError(403, 50013, "Missing Permissions")
            body["embeds"] = []
        if (
            not any(body.get(k) for k in ("content", "embeds", "sticker_ids", "components", "poll"))
            and not files
        ):
            raise ApiError(400, 50006, "Cannot send an empty message", f"{where}: empty message")
        return self._message(channel.id, body, self._attachments(channel.id, body, files))

    async def _create_message(self, ctx: _Ctx) -> web.Response:
        channel = self._channel(ctx.params["channel_id"])
        where = f"POST {ctx.record.path}"
        if channel.type == FORUM_CHANNEL:
            raise ApiError(
                400,
                50008,
                "Cannot send messages in a non-text channel",
                f"{where}: a forum takes posts (POST /channels/{{id}}/threads), not messages",
            )
        body = ctx.body or {}
        nonce_key = (channel.id, self.bot_user_id, str(body.get("nonce")))
        if body.get("enforce_nonce") and body.get("nonce") is not None and nonce_key in self._nonces:
            self._require(channel, SEND_MESSAGES_IN_THREADS if channel.is_thread else SEND_MESSAGES)
            return _json_response(200, self._nonces[nonce_key])
        message = self._post_message(channel, body, ctx.files, where)
        if body.get("nonce") is not None:
            self._nonces[nonce_key] = message
        self._messages.setdefault(channel.id, []).append(message)
        self._emit("MESSAGE_CREATE", {**message, "guild_id": str(channel.guild_id)}, INTENT_GUILD_MESSAGES)
        return _json_response(200, message)

    async def _list_messages(self, ctx: _Ctx) -> web.Response:
        """Channel history, newest first, with `limit` (1-100) and `before` as Discord pages it."""
        channel = self._channel(ctx.params["channel_id"])
        self._require(channel, VIEW_CHANNEL)
        query = ctx.record.query
        limit = max(1, min(100, int(query.get("limit", 50))))
        before = int(query["before"]) if query.get("before") else None
        newest_first = sorted(self._messages.get(channel.id, []), key=lambda m: int(m["id"]), reverse=True)
        if before is not None:
            newest_first = [m for m in newest_first if int(m["id"]) < before]
        return _json_response(200, newest_first[:limit])

    async def _create_thread(self, ctx: _Ctx) -> web.Response:
        parent = self._channel(ctx.params["channel_id"])
        body = ctx.body or {}
        where = f"POST {ctx.record.path}"
        if parent.type not in (TEXT_CHANNEL, FORUM_CHANNEL):
            raise ApiError(
                400, 50024, "Cannot execute action on this channel type", f"{where}: not a thread parent"
            )
        known = {t["id"] for t in parent.tags}
        unknown = [t for t in body.get("applied_tags") or [] if str(t) not in known]
        if unknown:
            raise ApiError(
                400, 50035, "Invalid Form Body", f"{where}: applied_tags {unknown} not in the forum's tags"
            )
        if parent.type == FORUM_CHANNEL and not isinstance(body.get("message"), dict):
            raise ApiError(400, 50035, "Invalid Form Body", f"{where}: a forum post needs a message")
        self._require(parent, SEND_MESSAGES if parent.type == FORUM_CHANNEL else CREATE_PUBLIC_THREADS)
        thread = Channel(
            self._snowflake(),
            parent.guild_id,
            body["name"],
            PUBLIC_THREAD,
            0,
            bot_permissions=parent.bot_permissions,
            parent_id=parent.id,
            owner_id=self.bot_user_id,
            applied_tags=[str(t) for t in body.get("applied_tags") or []],
        )
        payload = {}
        if parent.type == FORUM_CHANNEL:
            message = self._post_message(parent, body["message"], ctx.files, where)
            message |= {
                "id": str(thread.id),
                "channel_id": str(thread.id),
            }  # the starter shares the thread id
            self._messages[thread.id] = [message]
            payload["message"] = message
        self._channels[thread.id] = thread
        next(g for g in self.guilds if g.id == parent.guild_id).channels.append(thread)
        payload = {**self._thread_payload(thread), **payload}
        self._threads.setdefault(parent.id, []).append(payload)
        self._emit("THREAD_CREATE", {**self._thread_payload(thread), "newly_created": True})
        if "message" in payload:
            self._emit(
                "MESSAGE_CREATE",
                {**payload["message"], "guild_id": str(thread.guild_id)},
                INTENT_GUILD_MESSAGES,
            )
        return _json_response(201, payload)

    # ---- REST handlers: interactions and webhooks --------------------------------------------------------

    def _interaction_by(self, interaction_id: str | None, token: str) -> Interaction | None:
        return next(
            (
                i
                for i in self.interactions
                if i.token == token and (interaction_id is None or str(i.id) == interaction_id)
            ),
            None,
        )

    async def _callback(self, ctx: _Ctx) -> web.Response:
        record = self._interaction_by(ctx.params["interaction_id"], ctx.params["interaction_token"])
        body = ctx.body or {}
        cb_type = self._check_callback(record, body, f"POST {ctx.record.path}")
        assert record is not None
        message = self._apply_callback(record, cb_type, body.get("data") or {}, ctx.files)
        record.responses.append(body)
        if cb_type in (1, 8) or ctx.record.query.get("with_response") not in ("1", "true", "True"):
            return web.Response(status=204)
        return _json_response(200, self._callback_payload(record, cb_type, message))

    def _check_callback(self, record: Interaction | None, body: dict[str, Any], where: str) -> int:
        """Discord's refusals: unknown or expired token, second acknowledgement, wrong callback type."""
        if record is None:
            raise ApiError(404, 10062, "Unknown interaction", f"{where}: no such interaction")
        if record.responses:
            raise ApiError(
                400,
                40060,
                "Interaction has already been acknowledged.",
                f"{where}: /{record.command} acknowledged twice",
            )
        late = asyncio.get_running_loop().time() - record.dispatched_at
        if late > self.interaction_deadline:
            raise ApiError(
                404,
                10062,
                "Unknown interaction",
                f"{where}: /{record.command} answered after {late:.2f}s > {self.interaction_deadline}s",
            )
        cb_type = body.get("type")
        if not isinstance(cb_type, int) or cb_type not in _VALID_CALLBACKS.get(record.type, set()):
            raise ApiError(
                400,
                50035,
                "Invalid Form Body",
                f"{where}: callback type {cb_type} is not valid for interaction type {record.type}",
            )
        return cb_type

    def _apply_callback(
        self, record: Interaction, cb_type: int, data: dict[str, Any], files: dict[int, RecordedFile]
    ) -> dict[str, Any] | None:
        """The message a callback creates (4: reply, 5: "thinking") or updates (7); choices for 8."""
        channel_id = int(record.payload["channel_id"])
        if cb_type == 8:
            record.choices = list(data.get("choices") or [])
        elif cb_type in (4, 5):
            flags = (data.get("flags") or 0) & EPHEMERAL
            if cb_type == 4:
                record.original = self._message(
                    channel_id,
                    data,
                    self._attachments(channel_id, data, files),
                    flags=flags,
                    interaction=record,
                )
            else:
                record.original = self._message(channel_id, {}, [], flags=flags | LOADING, interaction=record)
            return record.original
        elif cb_type == 7 and record.original is not None:
            return self._edit(record.original, data, files)
        return None

    def _callback_payload(
        self, record: Interaction, cb_type: int, message: dict[str, Any] | None
    ) -> dict[str, Any]:
        flags = message["flags"] if message else 0
        interaction: dict[str, Any] = {
            "id": str(record.id),
            "type": record.type,
            "response_message_loading": bool(flags & LOADING),
            "response_message_ephemeral": bool(flags & EPHEMERAL),
        }
        payload: dict[str, Any] = {"interaction": interaction}
        if message is not None:
            interaction["response_message_id"] = message["id"]
            payload["resource"] = {"type": cb_type, "message": message}
        return payload

    def _webhook_interaction(self, ctx: _Ctx) -> Interaction:
        where = f"{ctx.record.method} {ctx.record.path}"
        record = self._interaction_by(None, ctx.params["webhook_token"])
        if ctx.params["webhook_id"] != str(self.application_id) or record is None:
            raise ApiError(404, 10015, "Unknown Webhook", f"{where}: not an interaction webhook of this bot")
        if not record.responses or record.callback_type == 8:
            raise ApiError(
                404,
                10015,
                "Unknown Webhook",
                f"{where}: /{record.command} follow-up before the interaction was acknowledged",
            )
        return record

    async def _followup(self, ctx: _Ctx) -> web.Response:
        record = self._webhook_interaction(ctx)
        body = ctx.body or {}
        record.followups.append(body)
        channel_id = int(record.payload["channel_id"])
        original = record.original
        if original is not None and original["flags"] & LOADING:
            # The first follow-up after defer() fills the "thinking" message and keeps its ephemeral flag.
            message = self._edit(original, {k: v for k, v in body.items() if k != "flags"}, ctx.files)
        else:
            attachments = self._attachments(channel_id, body, ctx.files)
            message = self._message(
                channel_id, body, attachments, flags=(body.get("flags") or 0) & EPHEMERAL, interaction=record
            )
        record.followup_messages.append(message)
        if ctx.record.query.get("wait") in ("1", "true", "True"):
            return _json_response(200, message)
        return web.Response(status=204)

    def _edit(
        self, message: dict[str, Any], body: dict[str, Any], files: dict[int, RecordedFile]
    ) -> dict[str, Any]:
        """Apply an edit in place (fields present replace; `attachments` lists the ones to keep)."""
        channel_id = int(message["channel_id"])
        if "content" in body:
            message["content"] = body["content"] or ""
        if "embeds" in body:
            message["embeds"] = [{"type": "rich", **e} for e in body["embeds"] or []]
        if "components" in body:
            message["components"] = body["components"] or []
        if "attachments" in body or files:
            kept = message["attachments"] if "attachments" in body else []
            new = self._attachments(channel_id, body, files, kept=kept)
            message["attachments"] = new if "attachments" in body else message["attachments"] + new
        message["flags"] &= ~LOADING
        message["edited_timestamp"] = _now_iso()
        return message

    async def _webhook_message(self, ctx: _Ctx) -> web.StreamResponse:
        record = self._webhook_interaction(ctx)
        message_id = ctx.params.get("message_id")
        if message_id is None:
            message = record.original
        else:
            candidates = [record.original, *record.followup_messages]
            message = next((m for m in candidates if m is not None and m["id"] == message_id), None)
        if message is None:
            raise ApiError(404, 10008, "Unknown Message")
        if ctx.record.method == "GET":
            return _json_response(200, message)
        if ctx.record.method == "DELETE":
            if message is record.original:
                record.original = None
            record.followup_messages = [m for m in record.followup_messages if m is not message]
            return web.Response(status=204)
        record.edits.append(ctx.body or {})
        return _json_response(200, self._edit(message, ctx.body or {}, ctx.files))

    async def _handle_attachment(self, request: web.Request) -> web.Response:
        file = self._files.get(int(request.match_info["attachment_id"]))
        if file is None:
            return web.Response(status=404)
        return web.Response(body=file.data, content_type=file.content_type or "application/octet-stream")


_VALIDATOR: OpenAPIValidator | None = None


def _shared_validator() -> OpenAPIValidator:
    """One validator per process: its per-operation cache then serves every FakeDiscord."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = OpenAPIValidator()
    return _VALIDATOR


# ----------------------------------------------------------------------------------------------------------
# Pointing discord.py at the fake


@contextlib.contextmanager
def pointing_discord_at(fake: FakeDiscord) -> Iterator[None]:
    """Set discord.py's two process-global endpoints (REST base, gateway) to the fake; restore after."""
    from discord.gateway import DiscordWebSocket
    from discord.http import Route

    old_base, old_gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = fake.api_base
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)
    try:
        yield
    finally:
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = old_base, old_gateway


@contextlib.asynccontextmanager
async def running_client(
    fake: FakeDiscord, client: discord.Client, *, token: str | None = None
) -> AsyncIterator[discord.Client]:
    """Start `client` against the fake, yield once it is ready, and always close it (no leaked tasks)."""
    with pointing_discord_at(fake):
        runner = asyncio.create_task(client.start(token or fake.token), name="discord-client")
        ready = asyncio.create_task(client.wait_until_ready(), name="discord-client-ready")
        try:
            done, _ = await asyncio.wait(
                {runner, ready}, timeout=fake.timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if runner in done:
                runner.result()  # login failures surface here
                raise RuntimeError("the client stopped before it was ready")
            if ready not in done:
                raise TimeoutError(f"client not ready within {fake.timeout}s; violations={fake.violations}")
            yield client
        finally:
            ready.cancel()
            await client.close()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(runner, ready, return_exceptions=True)

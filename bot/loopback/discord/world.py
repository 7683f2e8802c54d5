"""The loopback Discord's state: guilds, channels, members, what the bot sent; its lifecycle and waits."""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.loopback.discord.records import (
    API_PREFIX,
    DISCORD_EPOCH_MS,
    Channel,
    Guild,
    Interaction,
    Member,
    RecordedFile,
    RecordedRequest,
    RequestCheck,
    _Bucket,
    _Fault,
    _pattern_regex,
    _Route,
)


@dataclass
class GatewaySession:
    """One IDENTIFY's session. Every dispatch is kept so a RESUME can replay what the client missed; a session
    identified with a shard `(id, count)` holds only the guilds Discord sends that shard."""

    id: str
    shard: tuple[int, int] | None
    intents: int
    events: list[dict[str, Any]] = field(default_factory=list)
    sent_seq: int = 0
    live_ws: web.WebSocketResponse | None = None

    def holds(self, guild_id: int) -> bool:
        return self.shard is None or (guild_id >> 22) % self.shard[1] == self.shard[0]

    def queue(self, event: str, data: dict[str, Any]) -> None:
        self.events.append({"op": 0, "t": event, "s": len(self.events) + 1, "d": data})


class World:
    def __init__(
        self,
        *,
        heartbeat_interval_ms: int = 1000,
        interaction_deadline: float = 3.0,
        timeout: float = 10.0,
        check: RequestCheck | None = None,
    ) -> None:
        self.token = "fake." + secrets.token_urlsafe(24)
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.interaction_deadline = interaction_deadline
        self.timeout = timeout  # default bound of every wait helper
        self.check = check  # what a test adds on top of the routes: e.g. Discord's OpenAPI schema
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
        self._routes: list[_Route] = []  # the server's own table, set by LoopbackDiscord
        # Gateway sessions, one per shard (None: unsharded), each resumable on its own.
        self.sessions: dict[tuple[int, int] | None, GatewaySession] = {}
        self._sockets: set[web.WebSocketResponse] = set()
        self._wake_sender = asyncio.Event()
        self._gate_open = asyncio.Event()
        self._gate_open.set()
        self._runner: web.AppRunner | None = None
        self._sender: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def session_id(self) -> str | None:
        """The newest session's id (None before the first IDENTIFY)."""
        return next(reversed(self.sessions.values())).id if self.sessions else None

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
        """Close every live gateway connection; for resumable codes the client must RESUME."""
        for session in list(self.sessions.values()):
            ws, session.live_ws = session.live_ws, None
            if ws is not None:
                self.gateway_log.append(("CLOSE", code))
                await ws.close(code=code, message=b"closed by the fake")

    async def request_reconnect(self) -> None:
        """Send op 7 RECONNECT on every live connection: the client closes and resumes."""
        for session in list(self.sessions.values()):
            if session.live_ws is not None:
                await session.live_ws.send_str(json.dumps({"op": 7, "d": None, "s": None, "t": None}))

"""The loopback Discord's gateway (hello, identify, resume with replay, dispatch) and the interactions a test sends through it."""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from typing import Any

from aiohttp import WSMsgType, web

from bot.loopback.discord.payloads import Payloads
from bot.loopback.discord.records import (
    _PY_OPTION_TYPES,
    ALL_PERMISSIONS,
    ATTACHMENT_SIZE_LIMIT,
    FORUM_CHANNEL,
    INTENT_GUILD_MEMBERS,
    TEXT_CHANNEL,
    Channel,
    Guild,
    Interaction,
    Member,
)
from bot.loopback.discord.world import GatewaySession


class Gateway(Payloads):
    # ---- gateway -----------------------------------------------------------------------------------------

    def _emit(
        self, event: str, data: dict[str, Any], intent: int | None = None, guild_id: int | None = None
    ) -> None:
        """Queue a dispatch for every session holding its guild (`guild_id`, else the payload's); the sender
        delivers it now to a live session, else a RESUME replays it.

        Events gated by an intent bit are only sent to sessions identified with that intent.
        """
        if guild_id is None and data.get("guild_id") is not None:
            guild_id = int(data["guild_id"])
        for session in self.sessions.values():
            if guild_id is not None and not session.holds(guild_id):
                continue
            if intent is not None and not session.intents & intent:
                continue
            session.queue(event, data)
        self._wake_sender.set()

    async def _send_loop(self) -> None:
        while True:
            await self._wake_sender.wait()
            self._wake_sender.clear()
            for session in list(self.sessions.values()):
                await self._flush(session)

    async def _flush(self, session: GatewaySession) -> None:
        ws = session.live_ws
        while (
            ws is not None
            and ws is session.live_ws
            and not ws.closed
            and session.sent_seq < len(session.events)
        ):
            event = session.events[session.sent_seq]
            try:
                await ws.send_str(json.dumps(event))
            except ConnectionError:
                return  # the client will RESUME from its last sequence
            session.sent_seq += 1
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
            for session in self.sessions.values():
                if session.live_ws is ws:
                    session.live_ws = None
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
        shard = data.get("shard")  # [id, count]: Discord sends a shard the guilds (id >> 22) % count == id
        self.gateway_log.append(("IDENTIFY", data.get("intents"), shard))
        key = (int(shard[0]), int(shard[1])) if shard else None
        session = GatewaySession(uuid.uuid4().hex, key, int(data.get("intents") or 0), live_ws=ws)
        self.sessions.pop(key, None)  # a shard identifying again starts over; the other shards carry on
        self.sessions[key] = session
        guilds = [g for g in self.guilds if session.holds(g.id)]
        ready: dict[str, Any] = {
            "v": 10,
            "user": self._bot_user(),
            "session_id": session.id,
            "resume_gateway_url": self.resume_gateway_url,
            "session_type": "normal",
            "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
            "application": {"id": str(self.application_id), "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "geo_ordered_rtc_regions": [],
        }
        if shard is not None:
            ready["shard"] = shard
        session.queue("READY", ready)
        for guild in guilds:
            session.queue("GUILD_CREATE", self._guild_payload(guild))
        self._wake_sender.set()
        self._notify()

    async def _resume(self, ws: web.WebSocketResponse, path: str, data: dict[str, Any]) -> None:
        seq = data.get("seq") or 0
        session = next((s for s in self.sessions.values() if s.id == data.get("session_id")), None)
        if data.get("token") != self.token or session is None or seq > len(session.events):
            await ws.send_str(json.dumps({"op": 9, "d": False, "s": None, "t": None}))
            return
        self.gateway_log.append(("RESUME", seq, path))
        missed = [e["t"] for e in session.events[seq:]]
        if missed:
            self.gateway_log.append(("REPLAY", *missed))
        session.sent_seq, session.live_ws = seq, ws
        session.queue("RESUMED", {})
        self._wake_sender.set()
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
        self._dispatch_interaction(record)
        return record

    def _dispatch_interaction(self, record: Interaction) -> None:
        """Send the interaction to the session holding its guild, as Discord does, and log which shard got it."""
        guild_id = int(record.payload["guild_id"])
        shards = [s.shard for s in self.sessions.values() if s.holds(guild_id)]
        self.gateway_log.append(("INTERACTION", record.id, shards))
        self._emit("INTERACTION_CREATE", record.payload)

    async def _await_session(self, guild: Guild | int) -> None:
        """Wait until a session holds the guild: Discord only sends it interactions once its shard is up."""
        guild_id = guild if isinstance(guild, int) else guild.id
        await self.wait_for(lambda: any(s.holds(guild_id) for s in self.sessions.values()))

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
        await self._await_session(guild)
        return self._interaction(2, guild, channel, member, command, options or [])

    async def autocomplete(
        self, guild: Guild, channel: Channel, member: Member, command: str, options: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Send an autocomplete interaction (type 4) and return the choices the bot answered.

        Exactly one option is focused: the one marked `focused: True`, else the last one.
        """
        await self._await_session(guild)
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
        await self._await_session(member.guild_id)
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
        self._dispatch_interaction(record)
        return record

    # ---- world model -------------------------------------------------------------------------------------

    def add_guild(self, name: str) -> Guild:
        guild = Guild(self._snowflake(), name, self.owner_user_id)
        bot = Member(
            self.bot_user_id, "paperwatch-test", guild.id, ALL_PERMISSIONS, self._snowflake(), bot=True
        )
        guild.members.append(bot)
        self._members[bot.id] = bot
        self.guilds.append(guild)
        self._emit("GUILD_CREATE", self._guild_payload(guild), guild_id=guild.id)
        return guild

    def _add_channel(self, guild: Guild, name: str, type_: int, tags: list[dict[str, Any]]) -> Channel:
        channel = Channel(self._snowflake(), guild.id, name, type_, len(guild.channels), tags)
        guild.channels.append(channel)
        self._channels[channel.id] = channel
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
        self._emit("CHANNEL_UPDATE", self._channel_payload(channel))

    def delete_channel(self, channel: Channel) -> None:
        channel.deleted = True
        self._emit("CHANNEL_DELETE", self._channel_payload(channel))

    def tag_id(self, forum: Channel, name: str) -> int:
        return next(int(t["id"]) for t in forum.tags if t["name"] == name)

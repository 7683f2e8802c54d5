"""The loopback Discord: the REST routes and their handlers on top of the state, payloads, gateway and plumbing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Self

from aiohttp import web

from bot.loopback.discord.records import (
    _VALID_CALLBACKS,
    ATTACH_FILES,
    CREATE_PUBLIC_THREADS,
    EMBED_LINKS,
    EPHEMERAL,
    FORUM_CHANNEL,
    INTENT_GUILD_MESSAGES,
    LOADING,
    PUBLIC_THREAD,
    SEND_MESSAGES,
    SEND_MESSAGES_IN_THREADS,
    TEXT_CHANNEL,
    VIEW_CHANNEL,
    ApiError,
    Channel,
    Interaction,
    RecordedFile,
    _Ctx,
    _json_response,
    _now_iso,
    _Route,
    _template_regex,
)
from bot.loopback.discord.rest import Rest


class LoopbackDiscord(Rest):
    """Loopback Discord: start it, point discord.py at it (`pointing_discord_at`), drive and observe."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._routes = self._build_routes()

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

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

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

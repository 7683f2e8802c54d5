"""The JSON the loopback Discord sends: users, channels, threads, guilds, messages, attachments."""

from __future__ import annotations

from typing import Any

from bot.loopback.discord.records import (
    ALL_PERMISSIONS,
    FORUM_CHANNEL,
    ApiError,
    Channel,
    Guild,
    Interaction,
    Member,
    RecordedFile,
    _now_iso,
)
from bot.loopback.discord.world import World


class Payloads(World):
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

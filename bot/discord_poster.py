"""Posts through the real discord.py client, and maps Discord's answers to delivery outcomes; every request of
the client waits its turn under the global rate limit (`paced`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

import aiohttp
import discord
from discord.enums import try_enum

from bot.delivery import ChannelGone, PostRejected, RetryLater
from bot.models import Paper
from bot.pacing import GlobalPacer
from bot.render import (
    THREAD_NAME_LIMIT,
    DigestItem,
    clip,
    digest_content,
    digest_embeds,
    digest_thread_name,
    digest_view,
    paper_compact_line,
    paper_embed,
    paper_view,
    thread_name,
)

log = logging.getLogger(__name__)


def paced(pacer: GlobalPacer) -> aiohttp.TraceConfig:
    """discord.py's `http_trace`: each request the bot token's global limit counts waits for `pacer` as it is
    sent, after discord.py's own waits for the route (a request paced before those could land in a later second
    with that second's own). Interactions are answered outside the global limit, so they never wait."""

    async def on_request_start(
        _session: aiohttp.ClientSession, _context: object, params: aiohttp.TraceRequestStartParams
    ) -> None:
        if (
            params.headers.get("Authorization", "").startswith("Bot ")
            and "/interactions/" not in params.url.path
        ):
            await pacer.acquire()

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_request_start)
    return trace


class ChannelTypes(Protocol):
    """Where each channel's kind is kept (the store's follows: /follow records it)."""

    async def channel_type(self, channel_id: int) -> int | None: ...

    async def set_channel_type(self, channel_id: int, channel_type: int) -> None: ...


Target = discord.TextChannel | discord.ForumChannel | discord.Thread | discord.PartialMessageable
# The kinds a message is posted in directly (Discord's channel types): by id alone, nothing asked of Discord first.
MESSAGEABLE = frozenset(
    {
        discord.ChannelType.text,
        discord.ChannelType.news,
        discord.ChannelType.public_thread,
        discord.ChannelType.private_thread,
        discord.ChannelType.news_thread,
    }
)
T = TypeVar("T")
NOT_TEXT = 50008  # Discord's error code: "Cannot send messages in a non-text channel" (e.g. a forum)


class DiscordPoster:
    def __init__(
        self,
        client: discord.Client,
        *,
        abstract_chars: int = 700,
        channel_types: ChannelTypes | None = None,
    ) -> None:
        self.client = client
        self.abstract_chars = abstract_chars
        self.channel_types = channel_types  # each channel's kind as recorded; None: asked of Discord
        self._known: dict[int, Target] = {}

    async def _channel(self, channel_id: int) -> Target:
        """The channel to post in. Without the gateway (a deliver-only process) the client caches no channels:
        a text channel or thread whose kind is recorded is posted to by id (a request less, under the global
        limit, for each channel and process); any other is fetched once over REST, and its kind recorded."""
        channel = self.client.get_channel(channel_id) or self._known.get(channel_id)
        if channel is None:
            kind = await self.channel_types.channel_type(channel_id) if self.channel_types else None
            known = try_enum(discord.ChannelType, kind) if kind is not None else None
            if known in MESSAGEABLE:
                channel = self._known[channel_id] = self.client.get_partial_messageable(
                    channel_id, type=known
                )
            else:
                channel = await self._fetch(channel_id)
        if not isinstance(channel, Target):
            raise ChannelGone(f"channel {channel_id} is not a text or forum channel")
        return channel

    async def _fetch(self, channel_id: int) -> Target:
        try:
            channel = await self.client.fetch_channel(channel_id)
        except discord.HTTPException as exc:
            raise _outcome(exc) from exc
        if not isinstance(channel, discord.TextChannel | discord.ForumChannel | discord.Thread):
            raise ChannelGone(f"channel {channel_id} is not a text or forum channel")
        self._known[channel_id] = channel
        if self.channel_types is not None:
            await self.channel_types.set_channel_type(channel_id, channel.type.value)
        return channel

    async def _in_channel(self, channel_id: int, act: Callable[[Target], Awaitable[T]]) -> T:
        """`act` in the channel, Discord's refusals mapped to outcomes. A channel reached by its recorded kind
        that Discord says takes no messages changed kind (a forum now): fetched, and `act` done as it is now."""
        channel = await self._channel(channel_id)
        try:
            return await act(channel)
        except discord.HTTPException as exc:
            if not (isinstance(channel, discord.PartialMessageable) and exc.code == NOT_TEXT):
                raise _outcome(exc) from exc
        self._known.pop(channel_id, None)
        channel = await self._fetch(channel_id)
        try:
            return await act(channel)
        except discord.HTTPException as exc:
            raise _outcome(exc) from exc

    async def post_card(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        # Rendering is CPU work (LaTeX conversion): off the event loop, like every render that can be large.
        embed = await asyncio.to_thread(paper_embed, paper, topics=topics, abstract_chars=self.abstract_chars)
        view = paper_view(paper)

        async def post(channel: Target) -> int:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(name=thread_name(paper), embed=embed, view=view)
                return created.message.id
            return (await channel.send(embed=embed, view=view, nonce=nonce)).id

        try:
            return await self._in_channel(channel_id, post)
        finally:
            view.stop()  # its buttons are persistent (cogs/cards.py): nothing to keep per message

    async def post_digest(self, channel_id: int, items: Sequence[DigestItem], nonce: str) -> int | None:
        """Up to ten compact cards in one message, all its embeds within Discord's 6,000 characters."""
        content, embeds = await asyncio.to_thread(_digest_message, items)
        view = digest_view([paper for paper, _ in items])

        async def post(channel: Target) -> int:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(
                    name=digest_thread_name(items), content=content, embeds=embeds, view=view
                )
                return created.message.id
            return (await channel.send(content=content, embeds=embeds, view=view, nonce=nonce)).id

        try:
            return await self._in_channel(channel_id, post)
        finally:
            view.stop()

    async def post_line(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        """The paper in its smallest form, one line of text: for a post Discord rejected as a card."""
        line = paper_compact_line(paper)

        async def post(channel: Target) -> int:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(name=thread_name(paper), content=line)
                return created.message.id
            return (await channel.send(content=line, nonce=nonce)).id

        return await self._in_channel(channel_id, post)

    async def post_text(self, channel_id: int, text: str, nonce: str) -> int | None:
        async def post(channel: Target) -> int:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(
                    name=clip(text.splitlines()[0], THREAD_NAME_LIMIT), content=text
                )
                return created.message.id
            return (await channel.send(content=text, nonce=nonce)).id

        return await self._in_channel(channel_id, post)

    async def repeats_safely(self, channel_id: int) -> bool:
        """A message carries its nonce with `enforce_nonce` (discord.py sets it), so Discord answers a repeat with
        the message it made; a forum's posts (new threads) carry none."""
        return not isinstance(await self._channel(channel_id), discord.ForumChannel)

    async def already_posted(self, channel_id: int, papers: Sequence[Paper]) -> set[str]:
        """Look through our recent posts in the channel (or the forum's threads) for these papers."""
        me = self.client.user
        if me is None:
            raise RetryLater("not logged in yet")
        my_id = me.id
        wanted = {p.abs_url: p.arxiv_id for p in papers}
        names = {thread_name(p): p.arxiv_id for p in papers}

        async def look(channel: Target) -> set[str]:
            found: set[str] = set()
            if isinstance(channel, discord.ForumChannel):
                for thread in channel.threads:
                    if thread.owner_id == my_id and thread.name in names:
                        found.add(names[thread.name])
                return found
            async for message in channel.history(limit=100):
                if message.author.id != my_id:
                    continue
                for embed in message.embeds:
                    if embed.url in wanted:
                        found.add(wanted[embed.url])
                # A paper posted in its smallest form, a line of text linking its abstract page.
                found.update(arxiv_id for url, arxiv_id in wanted.items() if f"(<{url}>)" in message.content)
            return found

        return await self._in_channel(channel_id, look)


def _digest_message(items: Sequence[DigestItem]) -> tuple[str, list[discord.Embed]]:
    return digest_content(items), digest_embeds(items)


def _outcome(exc: discord.HTTPException) -> Exception:
    """Rate limits and server errors: later. Refusals of the channel: broken. Anything else: this post is bad."""
    status = exc.status
    if status == 429 or status >= 500:
        retry_after = getattr(exc, "retry_after", None)
        return RetryLater(f"Discord answered {status}", retry_after)
    if isinstance(exc, discord.NotFound):
        return ChannelGone("the channel was deleted or the bot cannot see it (404)")
    if isinstance(exc, discord.Forbidden):
        return ChannelGone(f"the bot may not post there (403: {exc.text or 'Missing Access'})")
    return PostRejected(f"Discord rejected the post ({status}: {exc.text})")

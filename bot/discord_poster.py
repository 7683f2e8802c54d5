"""Posts through the real discord.py client, and maps Discord's answers to delivery outcomes; every request of
the client waits its turn under the global rate limit (`paced`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import aiohttp
import discord

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


class DiscordPoster:
    def __init__(self, client: discord.Client, *, abstract_chars: int = 700) -> None:
        self.client = client
        self.abstract_chars = abstract_chars
        self._fetched: dict[int, object] = {}

    async def _channel(self, channel_id: int) -> discord.TextChannel | discord.ForumChannel | discord.Thread:
        # Without the gateway (a deliver-only process) the client caches no channels: fetched once over REST.
        channel = self.client.get_channel(channel_id) or self._fetched.get(channel_id)
        if channel is None:
            try:
                channel = await self.client.fetch_channel(channel_id)
            except discord.HTTPException as exc:
                raise _outcome(exc) from exc
            self._fetched[channel_id] = channel
        if not isinstance(channel, discord.TextChannel | discord.ForumChannel | discord.Thread):
            raise ChannelGone(f"channel {channel_id} is not a text or forum channel")
        return channel

    async def post_card(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        channel = await self._channel(channel_id)
        # Rendering is CPU work (LaTeX conversion): off the event loop, like every render that can be large.
        embed = await asyncio.to_thread(paper_embed, paper, topics=topics, abstract_chars=self.abstract_chars)
        view = paper_view(paper)
        try:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(name=thread_name(paper), embed=embed, view=view)
                return created.message.id
            message = await channel.send(embed=embed, view=view, nonce=nonce)
            return message.id
        except discord.HTTPException as exc:
            raise _outcome(exc) from exc
        finally:
            view.stop()  # its buttons are persistent (cogs/cards.py): nothing to keep per message

    async def post_digest(self, channel_id: int, items: Sequence[DigestItem], nonce: str) -> int | None:
        """Up to ten compact cards in one message, all its embeds within Discord's 6,000 characters."""
        channel = await self._channel(channel_id)
        content, embeds = await asyncio.to_thread(_digest_message, items)
        view = digest_view([paper for paper, _ in items])
        try:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(
                    name=digest_thread_name(items), content=content, embeds=embeds, view=view
                )
                return created.message.id
            message = await channel.send(content=content, embeds=embeds, view=view, nonce=nonce)
            return message.id
        except discord.HTTPException as exc:
            raise _outcome(exc) from exc
        finally:
            view.stop()

    async def post_line(self, channel_id: int, paper: Paper, topics: Sequence[str], nonce: str) -> int | None:
        """The paper in its smallest form, one line of text: for a post Discord rejected as a card."""
        channel = await self._channel(channel_id)
        line = paper_compact_line(paper)
        try:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(name=thread_name(paper), content=line)
                return created.message.id
            message = await channel.send(content=line, nonce=nonce)
            return message.id
        except discord.HTTPException as exc:
            raise _outcome(exc) from exc

    async def post_text(self, channel_id: int, text: str, nonce: str) -> int | None:
        channel = await self._channel(channel_id)
        try:
            if isinstance(channel, discord.ForumChannel):
                created = await channel.create_thread(
                    name=clip(text.splitlines()[0], THREAD_NAME_LIMIT), content=text
                )
                return created.message.id
            message = await channel.send(content=text, nonce=nonce)
            return message.id
        except discord.HTTPException as exc:
            raise _outcome(exc) from exc

    async def already_posted(self, channel_id: int, papers: Sequence[Paper]) -> set[str]:
        """Look through our recent posts in the channel (or the forum's threads) for these papers."""
        channel = await self._channel(channel_id)
        me = self.client.user
        if me is None:
            raise RetryLater("not logged in yet")
        wanted = {p.abs_url: p.arxiv_id for p in papers}
        names = {thread_name(p): p.arxiv_id for p in papers}
        found: set[str] = set()
        try:
            if isinstance(channel, discord.ForumChannel):
                for thread in channel.threads:
                    if thread.owner_id == me.id and thread.name in names:
                        found.add(names[thread.name])
                return found
            async for message in channel.history(limit=100):
                if message.author.id != me.id:
                    continue
                for embed in message.embeds:
                    if embed.url in wanted:
                        found.add(wanted[embed.url])
                # A paper posted in its smallest form, a line of text linking its abstract page.
                found.update(arxiv_id for url, arxiv_id in wanted.items() if f"(<{url}>)" in message.content)
        except discord.HTTPException as exc:
            raise _outcome(exc) from exc
        return found


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

"""The Discord bot: owns the resources, loads the cogs, runs the scheduled work in the background."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import signal
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import discord
import yarl
from discord.ext import commands

from bot.clock import Clock, SystemClock
from bot.config import Settings, without_credentials
from bot.context import AppContext, open_context
from bot.delivery import DeliveryWorker
from bot.discord_poster import DiscordPoster, paced
from bot.errors import ConfigError, Unreachable
from bot.interaction_errors import on_app_command_error
from bot.pacing import GlobalPacer
from bot.scheduler import Scheduler
from bot.services import Services
from bot.topics.catalog import CatalogTopic

log = logging.getLogger(__name__)

COGS = (
    "cogs.follow",
    "cogs.momentum",
    "cogs.history",
    "cogs.admin",
    "cogs.ask",
    "cogs.cards",
    "cogs.saved",
)


def point_discord_at(settings: Settings) -> None:
    """discord.py reads its REST base and gateway from two process-wide settings; a proxy (or a test) moves them."""
    if settings.discord_api_base:
        discord.http.Route.BASE = settings.discord_api_base.rstrip("/")
    if settings.discord_gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord_gateway_url)


class PaperBot(commands.Bot):
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        schedule: bool = True,
        extra_topics: Sequence[CatalogTopic] = (),
        **client_options: Any,
    ) -> None:
        # paperwatch never joins a voice channel: discord.py's warnings about voice libraries are noise.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        # The bot token's global rate limit, shared with the other deliver processes (see setup_hook).
        pacer = GlobalPacer(clock or SystemClock(), limit=settings.discord_global_rate_limit)
        # Slash commands and buttons bring their own payloads (the member, the message clicked): the bot needs
        # the servers and their channels (GUILDS) and nothing else of the gateway. Channels' messages (which
        # discord.py kept, 1,000 of them, for events the bot never handles), members and voice states are
        # neither asked for nor kept.
        super().__init__(
            command_prefix=commands.when_mentioned,  # slash commands only; no message content intent
            intents=discord.Intents(guilds=True),
            max_messages=None,
            member_cache_flags=discord.MemberCacheFlags.none(),
            allowed_mentions=discord.AllowedMentions.none(),  # a title saying @everyone pings no one
            chunk_guilds_at_startup=False,
            http_trace=paced(pacer),
            **client_options,
        )
        self.pacer = pacer
        self.settings = settings
        self.clock = clock
        self.schedule = schedule
        self.extra_topics = extra_topics  # join the catalog (the demo's topic)
        self._resources = AsyncExitStack()
        self._ctx: AppContext | None = None
        self._worker: DeliveryWorker | None = None
        self.scheduler: Scheduler | None = None
        self.history_task: asyncio.Task[int] | None = None  # catalog history matched after start, in chunks
        self.logged_in = False  # Discord answered the login: later errors are not about reaching it
        self._closed = asyncio.Event()

    @property
    def ctx(self) -> AppContext:
        if self._ctx is None:
            raise RuntimeError("the bot is not set up yet")
        return self._ctx

    @property
    def services(self) -> Services:
        """What the cogs call: the use cases, built once at setup."""
        return self.ctx.services

    @property
    def worker(self) -> DeliveryWorker:
        if self._worker is None:
            raise RuntimeError("the bot is not set up yet")
        return self._worker

    @property
    def roles(self) -> tuple[str, ...]:
        return self.settings.roles

    async def setup_hook(self) -> None:
        self.logged_in = True
        log.info("database %s; roles %s", self.settings.database_shown, ",".join(self.roles))
        # The history of new or changed catalog topics is matched in the background: at 1M papers it took 10 s,
        # during which the bot did not even connect to Discord.
        self._ctx = await self._resources.enter_async_context(
            open_context(
                self.settings, self.clock, extra_topics=self.extra_topics, history_in_background=True
            )
        )
        poster = DiscordPoster(self, abstract_chars=self.settings.abstract_chars)
        self._worker = self.ctx.delivery_worker(
            poster,
            per_channel=self.settings.posts_per_channel_per_cycle,
            lease_seconds=self.settings.delivery_lease_seconds,
            global_per_second=self.pacer.limit,
        )
        if "deliver" in self.roles:  # Discord's global limit shared with the other deliver processes
            self.pacer.share(self.worker.store.deliveries.take_turn)
        poster.channel_types = self.worker.store.follows  # each channel's kind, as /follow recorded it
        if "gateway" in self.roles:
            self.tree.error(on_app_command_error)
            for name in COGS:
                await self.load_extension(name)
        if self.schedule:
            worker = self.worker if "deliver" in self.roles else None
            self.scheduler = Scheduler(self.ctx, worker, poll="poll" in self.roles)
            self.scheduler.start()
        if "gateway" in self.roles:
            if self.settings.dev_guild_id:
                guild = discord.Object(self.settings.dev_guild_id)
                self.tree.copy_global_to(guild=guild)
                await self.tree.sync(guild=guild)
            await self.tree.sync()
        if "poll" in self.roles:  # the history's matches are written once, by a process that polls
            self.history_task = asyncio.create_task(self._match_history(), name="catalog history")
        # Everything built so far (discord.py, the catalog, the topic index) lives as long as the bot: moved out
        # of the collector's sight, so a full collection no longer rescans it. Such passes held the event loop
        # for 100-270 ms during a backfill (bench/bench_load.py).
        gc.freeze()

    async def _match_history(self) -> int:
        try:
            added = await self.ctx.match_history()
        except Exception:  # the queue stays in the store: the next start resumes it
            log.exception("matching the catalog topics' history failed")
            raise
        log.info("catalog history matched: %d matches added", added)
        return added

    async def wait_until_closed(self) -> None:
        """Until close(): a process without the gateway role has no connection whose end would say so."""
        await self._closed.wait()

    async def on_ready(self) -> None:
        log.info("logged in as %s in %d servers", self.user, len(self.guilds))

    async def close(self) -> None:
        if self.history_task is not None and not self.history_task.done():
            self.history_task.cancel()  # resumed at the next start: the queue is in the store
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.history_task
        if self.scheduler is not None:
            await self.scheduler.stop()
        elif self._worker is not None:
            self._worker.stopping = True
        await super().close()
        await self._resources.aclose()
        self._closed.set()


class ShardedPaperBot(PaperBot, commands.AutoShardedBot):
    """The bot over the shards SHARD_IDS of SHARD_COUNT (discord.py's AutoShardedBot): one gateway connection
    per shard; Discord sends each server's events to the shard holding it, (server id >> 22) % SHARD_COUNT."""


def build_bot(settings: Settings) -> PaperBot:
    """The bot the settings ask for: sharded when SHARD_COUNT is set."""
    if settings.shard_count is None:
        return PaperBot(settings)
    ids = list(settings.shard_ids) or list(range(settings.shard_count))
    return ShardedPaperBot(settings, shard_count=settings.shard_count, shard_ids=ids)


def discord_api_base() -> str:
    return without_credentials(str(discord.http.Route.BASE))


M_ARENA_MAX = -8  # glibc's mallopt() parameter: how many malloc arenas threads may spread over
MALLOC_ARENAS = 2


def share_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Let the process's threads share `arenas` malloc arenas (glibc gives up to 8 per core, one per thread
    that allocates while another holds one): the bot's threads (one per SQLite connection, asyncio's workers)
    each kept freed memory in an arena of its own. Measured at 1M papers: 5-7 MiB less resident memory after
    bench_million's mix. Call before any thread starts (what MALLOC_ARENA_MAX=2 does, from inside). Returns
    whether it applied (False off glibc)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # not glibc: its own allocator, nothing to set
        return False


def run_bot(settings: Settings, token: str) -> int:
    """Run until SIGINT or SIGTERM, then stop cleanly: the post in flight finishes, the rest stays queued."""
    share_malloc_arenas()
    point_discord_at(settings)
    bot: PaperBot | None = None

    async def main() -> None:
        nonlocal bot
        bot = current = build_bot(settings)
        loop = asyncio.get_running_loop()
        stopping: list[asyncio.Task[None]] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, lambda: stopping.append(asyncio.create_task(current.close())))
        async with current:
            if "gateway" in settings.roles:
                await current.start(token)  # the token is never logged
            else:  # deliver (and poll) only: Discord's REST API, never a gateway connection
                await current.login(token)
                await current.wait_until_closed()
        await asyncio.gather(*stopping)

    try:
        asyncio.run(main())
    except discord.LoginFailure:
        raise ConfigError(
            "Discord refused the token in DISCORD_TOKEN: copy it again from the developer portal "
            "(Bot -> Reset Token) into .env"
        ) from None
    except aiohttp.ClientConnectorError as exc:  # DNS failure, refused or timed-out connection
        raise Unreachable(
            f"could not reach Discord at {discord_api_base()} ({exc}): check the network connection "
            "(DNS, firewall, proxy) and DISCORD_API_BASE, then start again"
        ) from None
    except discord.HTTPException as exc:
        if bot is not None and bot.logged_in:
            raise
        # Something answered, but not as Discord's API would: DISCORD_API_BASE points elsewhere.
        raise Unreachable(
            f"{discord_api_base()} answered the login with HTTP {exc.status}, not as Discord's API would: "
            "check DISCORD_API_BASE (empty for Discord itself, or your proxy's /api/v10 URL)"
        ) from None
    return 0

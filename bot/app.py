"""The Discord bot: owns the resources, loads the cogs, and runs the scheduled work in the background."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack

import discord
from discord.ext import commands

from bot.config import Settings
from bot.context import AppContext, open_context
from bot.scheduler import Scheduler

log = logging.getLogger(__name__)

COGS: tuple[str, ...] = ()  # extension modules under cogs/, loaded in setup_hook


class PaperBot(commands.Bot):
    def __init__(self, settings: Settings) -> None:
        super().__init__(
            command_prefix=commands.when_mentioned,  # slash commands only; no message content intent
            intents=discord.Intents.default(),
            allowed_mentions=discord.AllowedMentions.none(),  # a paper title saying @everyone pings no one
            chunk_guilds_at_startup=False,
        )
        self.settings = settings
        self._resources = AsyncExitStack()
        self.ctx: AppContext | None = None
        self.scheduler: Scheduler | None = None

    async def setup_hook(self) -> None:
        self.ctx = await self._resources.enter_async_context(open_context(self.settings))
        for name in COGS:
            await self.load_extension(name)
        self.scheduler = Scheduler(self.ctx)
        self.scheduler.start()
        if self.settings.dev_guild_id:
            guild = discord.Object(self.settings.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        await self.tree.sync()

    async def close(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()
        await super().close()
        await self._resources.aclose()


def run_bot(settings: Settings, token: str) -> int:
    bot = PaperBot(settings)
    bot.run(token, log_handler=None)  # logging is configured by the CLI; the token is never logged
    return 0

"""Slash commands: placeholder, filled in by the momentum cog work."""

from __future__ import annotations

from discord.ext import commands

from bot.app import PaperBot


class MomentumCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(MomentumCog(bot))

"""Slash commands: placeholder, filled in by the follow cog work."""

from __future__ import annotations

from discord.ext import commands

from bot.app import PaperBot


class FollowCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(FollowCog(bot))

"""/ask and /brief: answers drawn from the stored papers, each statement citing the papers listed under it.

Every input is checked (and the rate limit counted) before deferring, so a mistake gets a private answer; the
answer is then edited into the public "thinking" message."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.render.answer import answer_markdown, brief_markdown
from bot.services.ask import MAX_BRIEF_WEEKS, MAX_QUESTION_LENGTH, check_brief_weeks, check_question
from bot.services.topics import MAX_NAME_LENGTH
from cogs.common import guild_id_of, resolve_topic, services, topic_autocomplete

MAX_SINCE_LENGTH = 20


class AskCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

    @app_commands.command(
        name="ask",
        description="Ask about the stored papers: an answer quoted from their abstracts, with sources",
    )
    @app_commands.describe(
        question=f"What you want to know, in words (at most {MAX_QUESTION_LENGTH} characters)",
        topic="Only papers of this topic and its sub-topics",
        since="Only papers submitted since a day (YYYY-MM-DD) or a span back from today (10d, 4w, 6m, 1y)",
    )
    @app_commands.autocomplete(topic=topic_autocomplete)
    @app_commands.guild_only()
    async def ask(
        self,
        interaction: discord.Interaction,
        question: str,
        topic: app_commands.Range[str, 1, MAX_NAME_LENGTH] | None = None,
        since: app_commands.Range[str, 1, MAX_SINCE_LENGTH] | None = None,
    ) -> None:
        service = services(interaction).ask
        guild_id = guild_id_of(interaction)
        asked = check_question(question)
        since_at = service.since(since)
        row = await resolve_topic(interaction, topic) if topic is not None else None
        service.admit(guild_id, interaction.user.id)
        await interaction.response.defer(thinking=True)
        answer = await service.ask(asked, topic=row, since=since_at, guild_id=guild_id)
        await interaction.edit_original_response(
            content=answer_markdown(answer), allowed_mentions=discord.AllowedMentions.none()
        )

    @app_commands.command(
        name="brief",
        description="What moved in a topic: rising phrases, active authors, representative papers",
    )
    @app_commands.describe(
        topic="The topic to sum up (with its sub-topics)",
        weeks=f"The period, in weeks back from today (1-{MAX_BRIEF_WEEKS}, default 4), against twice as many before",
    )
    @app_commands.autocomplete(topic=topic_autocomplete)
    @app_commands.guild_only()
    async def brief(
        self,
        interaction: discord.Interaction,
        topic: app_commands.Range[str, 1, MAX_NAME_LENGTH],
        weeks: app_commands.Range[int, 1, MAX_BRIEF_WEEKS] = 4,
    ) -> None:
        service = services(interaction).ask
        guild_id = guild_id_of(interaction)
        check_brief_weeks(weeks)
        row = await resolve_topic(interaction, topic)
        service.admit(guild_id, interaction.user.id)
        await interaction.response.defer(thinking=True)
        brief = await service.brief(row, weeks, guild_id)
        await interaction.edit_original_response(
            content=brief_markdown(brief), allowed_mentions=discord.AllowedMentions.none()
        )


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(AskCog(bot))

"""/momentum: how fast a topic is growing (sentence, sparkline, weekly chart), or this server's topics ranked."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.charts import weekly_chart
from bot.models import TopicRow
from bot.momentum import MAX_WEEKS, Momentum, check_weeks
from bot.render import DESCRIPTION_LIMIT, TITLE_LIMIT, clip, inert_markdown, neutralise_mentions
from bot.services.topics import MAX_NAME_LENGTH
from cogs.common import guild_id_of, resolve_topic, services, topic_autocomplete
from cogs.pagination import Page, inline_text, pack_lines, send_pages

CHART_FILE = "momentum.png"
TOPICS_PER_PAGE = 15
COLOUR = discord.Colour(0x5865F2)  # the chart's bar colour
NOTHING_FOLLOWED = (
    "This server follows no topics yet, so there is nothing to rank. Ask for one topic with "
    "/momentum topic:<name>, or follow one with /follow topic:<name>."
)


def change_text(m: Momentum) -> str:
    """+53%, −20%, new or no papers; with a warning when the counts are too small to mean much."""
    if m.current == 0 and m.previous == 0:
        return "no papers"
    pct = m.change_pct
    text = "new" if pct is None else f"{pct:+.0f}%".replace("-", "−")
    return f"{text} (few papers)" if m.too_small and pct is not None else text


def ranking_line(rank: int, m: Momentum) -> str:
    papers = "1 paper" if m.current == 1 else f"{m.current:,} papers"
    name = inline_text(m.topic, MAX_NAME_LENGTH)
    return f"{rank}. **{name}** · {papers} · {change_text(m)} · `{m.sparkline()}`"


def span_text(weeks: int) -> str:
    return "week" if weeks == 1 else f"{weeks} weeks"


def window_text(m: Momentum) -> str:
    last_day = m.window_end - timedelta(days=1)
    return f"{m.window_start:%b %d} – {last_day:%b %d, %Y} (UTC) vs the {span_text(m.weeks)} before"


def matching_note(share: float) -> str:
    return (
        f"Matching history: {share:.0%}… This topic's stored papers are still being matched, so these counts "
        "are low until that is done. Ask again in a few minutes."
    )


def topic_embed(m: Momentum) -> discord.Embed:
    embed = discord.Embed(
        title=clip(neutralise_mentions(" ".join(m.topic.split())), TITLE_LIMIT),
        description=(
            f"{inert_markdown(m.sentence())}\n\n"
            f"Last {len(m.series)} weeks: `{m.sparkline()}` (the last bar is this week so far)"
        ),
        colour=COLOUR,
    )
    embed.set_image(url=f"attachment://{CHART_FILE}")
    embed.set_footer(text=f"{window_text(m)} · by first submission date")
    return embed


async def chart_file(m: Momentum) -> discord.File:
    title = clip(" ".join(m.topic.split()), 80)
    subtitle = m.sentence()
    png = await asyncio.to_thread(weekly_chart, m.series, title, subtitle)  # matplotlib is CPU-bound
    return discord.File(io.BytesIO(png), filename=CHART_FILE)


def ranking_pages(ranked: list[Momentum], weeks: int) -> list[Page]:
    lines = [ranking_line(i, m) for i, m in enumerate(ranked, start=1)]
    texts = pack_lines("", lines, per_page=TOPICS_PER_PAGE, limit=DESCRIPTION_LIMIT)
    span = span_text(weeks)
    pages = []
    for text in texts:
        embed = discord.Embed(title="Momentum of this server's topics", description=text, colour=COLOUR)
        embed.set_footer(
            text=f"Papers in the last {span} and the change on the {span} before; fastest-growing first. "
            "Sparklines: the last 12 weeks."
        )
        pages.append(Page(embeds=(embed,)))
    return pages


class MomentumCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

    @app_commands.command(
        name="momentum", description="How fast a topic is growing, or this server's topics ranked"
    )
    @app_commands.describe(
        topic="A topic to chart; leave empty to rank the topics this server follows",
        weeks="Length of the window compared with the one before it, in weeks (default 4)",
    )
    @app_commands.autocomplete(topic=topic_autocomplete)
    @app_commands.guild_only()
    async def momentum(
        self,
        interaction: discord.Interaction,
        topic: app_commands.Range[str, 1, MAX_NAME_LENGTH] | None = None,
        weeks: app_commands.Range[int, 1, MAX_WEEKS] = 4,
    ) -> None:
        guild_id = guild_id_of(interaction)
        check_weeks(weeks)  # Discord's range is a hint to clients; checked here, before deferring
        if topic is not None:
            # Resolved before deferring, so a wrong name gets a private answer.
            row = await resolve_topic(interaction, topic)
            await interaction.response.defer(thinking=True)
            await self._one_topic(interaction, row, weeks, guild_id)
        else:
            await self._ranking(interaction, guild_id, weeks)

    async def _one_topic(
        self, interaction: discord.Interaction, topic: TopicRow, weeks: int, guild_id: int
    ) -> None:
        momentum = services(interaction).momentum
        m = await momentum.topic(topic, weeks, guild_id)
        embed = topic_embed(m)
        matched = momentum.history_matched(topic)
        if matched is not None:
            embed.add_field(name="Still counting", value=matching_note(matched), inline=False)
        await interaction.followup.send(embed=embed, file=await chart_file(m))

    async def _ranking(self, interaction: discord.Interaction, guild_id: int, weeks: int) -> None:
        use = services(interaction)
        followed = await use.topics.followed_in(guild_id)
        if not followed:
            await interaction.response.send_message(NOTHING_FOLLOWED, ephemeral=True)
            return
        await interaction.response.defer(thinking=True)
        ranked = await use.momentum.ranking(followed, weeks, guild_id)
        await send_pages(interaction, ranking_pages(ranked, weeks))


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(MomentumCog(bot))

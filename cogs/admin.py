"""/status: is paperwatch polling, how much it holds, and what in this server needs someone's attention."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.models import Follow, SkippedSummary, SourceState
from bot.render import FIELD_VALUE_LIMIT, clip, fit_lines, safe_name
from bot.services.status import CatchUp, Status
from cogs.common import guild_id_of, services

ERROR_CHARS = 200
SKIPPED_CHARS = 160
FIX_BROKEN = (
    "To fix: give the bot View Channel, Send Messages and Embed Links there (for a forum: Create Posts and "
    "Send Messages in Posts), then run /follow again for that channel; or /unfollow the topic."
)


def when(moment: datetime | None, never: str = "never") -> str:
    return discord.utils.format_dt(moment, "R") if moment is not None else never


def next_poll(state: SourceState, now: datetime, interval: timedelta) -> str:
    """Polls run every interval after the last success; one that is overdue (or never ran) is due now."""
    if state.last_success is None or state.last_success + interval <= now:
        return "due now"
    return when(state.last_success + interval)


def inline_code(text: str, limit: int) -> str:
    """Text from a source shown verbatim: nothing in it can format, link or ping, and a backtick cannot close
    the span early."""
    return "`" + clip(" ".join(text.split()), limit).replace("`", "ˋ") + "`"


def skipped_text(summary: SkippedSummary) -> str:
    """How many entries a source skipped (each counted once, however often it was served) and the latest."""
    n = summary.entries
    latest = summary.latest
    return (
        f"🚫 {n:,} unusable {'entry' if n == 1 else 'entries'} skipped; latest {when(summary.latest_at)}: "
        + inline_code(f"{latest.entry_id}: {latest.reason}", SKIPPED_CHARS)
    )


def source_lines(
    sources: Sequence[SourceState],
    now: datetime,
    interval: timedelta,
    skipped_elsewhere: Sequence[SkippedSummary] = (),
) -> list[str]:
    elsewhere = [f"`{clip(s.source, 80)}`: {skipped_text(s)}" for s in skipped_elsewhere]
    if not sources:
        return ["No poll has run yet; the first one is due now.", *elsewhere]
    lines = []
    for state in sources:
        line = (
            f"`{clip(state.source, 80)}`: last success {when(state.last_success)}, "
            f"next poll {next_poll(state, now, interval)}"
        )
        if state.last_error:
            runs = (
                "1 failed poll"
                if state.consecutive_failures == 1
                else (f"{state.consecutive_failures} failed polls in a row")
            )
            error = safe_name(state.last_error, ERROR_CHARS)
            line += f"\n⚠️ {runs} (last {when(state.last_attempt)}): {error}"
        if state.skipped is not None:
            line += "\n" + skipped_text(state.skipped)
        lines.append(line)
    return lines + elsewhere


def deliveries_text(counts: Mapping[str, int]) -> str:
    queued = counts.get("pending", 0) + counts.get("sending", 0)
    text = f"{queued:,} queued · {counts.get('sent', 0):,} sent · {counts.get('failed', 0):,} failed"
    if counts.get("summarised"):
        text += f" · {counts['summarised']:,} named in “+N more” notes"
    return text


def broken_lines(broken: Sequence[Follow]) -> list[str]:
    return [
        f"**{safe_name(f.topic_name)}** in <#{f.channel_id}>: {safe_name(f.broken_reason or '', ERROR_CHARS)}"
        for f in broken
    ]


def status_embed(status: Status) -> discord.Embed:
    broken = status.broken
    failing = any(s.last_error for s in status.sources) or bool(broken)
    embed = discord.Embed(
        title="paperwatch status",
        colour=discord.Colour.orange() if failing else discord.Colour.green(),
    )
    lines = source_lines(status.sources, status.now, status.poll_interval, status.skipped_elsewhere)
    embed.add_field(name="arXiv polling", value=fit_lines(lines, FIELD_VALUE_LIMIT), inline=False)
    embed.add_field(name="Papers stored", value=f"{status.papers:,}", inline=True)
    embed.add_field(name="Posts in this server", value=deliveries_text(status.deliveries), inline=True)
    if broken:
        # The fix comes first so a long list cannot push it out of the field.
        room = FIELD_VALUE_LIMIT - len(FIX_BROKEN) - 1
        embed.add_field(
            name=f"Broken follows ({len(broken)})",
            value=FIX_BROKEN + "\n" + fit_lines(broken_lines(broken), room),
            inline=False,
        )
    else:
        embed.add_field(name="Broken follows", value="None.", inline=False)
    if status.history is not None:
        embed.add_field(name="History", value=history_text(status.history), inline=False)
    return embed


def history_text(history: CatchUp) -> str:
    topics = "1 topic" if history.topics == 1 else f"{history.topics} topics"
    return (
        f"Matching history: {history.share:.0%}… ({topics} still being matched against the stored papers). "
        "Commands answer meanwhile; those topics' counts grow until it is done."
    )


class AdminCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

    @app_commands.command(
        name="status", description="Polling, stored papers, and this server's posts and broken follows"
    )
    @app_commands.guild_only()
    async def status(self, interaction: discord.Interaction) -> None:
        status = await services(interaction).status.of_server(guild_id_of(interaction))
        await interaction.response.send_message(embed=status_embed(status), ephemeral=True)


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(AdminCog(bot))

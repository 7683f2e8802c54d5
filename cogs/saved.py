"""/saved: a member's reading list (papers saved with ⭐ on a card), listed, trimmed and exported as BibTeX."""

from __future__ import annotations

import io

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.models import SavedPaper
from bot.render import paper_compact_line
from cogs.common import services
from cogs.pagination import Page, pack_lines, send_pages

PER_PAGE = 10
LISTED = 500  # papers /saved list shows (newest first); /saved export gives the whole list
MAX_ID_LENGTH = 200
EXPORT_NAME = "paperwatch-saved.bib"


def saved_pages(saved: list[SavedPaper], total: int) -> list[Page]:
    if not saved:
        return [Page(content="Your reading list is empty: press ⭐ Save on a paper's card to add it.")]
    shown = f"the {len(saved)} newest of {total}" if total > len(saved) else f"{total}"
    header = (
        f"**Your reading list**: {shown} saved, newest first. /saved remove takes one off; /saved export "
        "gives them all as BibTeX."
    )
    entries = [
        f"{i}. {paper_compact_line(s.paper)} · saved {s.saved_at.date().isoformat()}"
        for i, s in enumerate(saved, start=1)
    ]
    return [Page(content=text) for text in pack_lines(header, entries, per_page=PER_PAGE)]


class SavedCog(commands.GroupCog, group_name="saved", group_description="Your reading list"):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="list", description="Your saved papers, newest first")
    async def list_saved(self, interaction: discord.Interaction) -> None:
        use = services(interaction).saved
        saved = await use.newest(interaction.user.id, limit=LISTED)
        total = await use.count(interaction.user.id)
        await send_pages(interaction, saved_pages(saved, total), ephemeral=True)

    @app_commands.command(name="remove", description="Take a paper off your reading list")
    @app_commands.describe(paper_id="The paper's arXiv id or link, as /saved list shows it")
    @app_commands.rename(paper_id="id")
    async def remove(
        self, interaction: discord.Interaction, paper_id: app_commands.Range[str, 1, MAX_ID_LENGTH]
    ) -> None:
        arxiv_id = await services(interaction).saved.remove(interaction.user.id, paper_id)
        await interaction.response.send_message(f"Took {arxiv_id} off your reading list.", ephemeral=True)

    @app_commands.command(name="export", description="Your reading list as a BibTeX file")
    async def export(self, interaction: discord.Interaction) -> None:
        text, count = await services(interaction).saved.bibtex(interaction.user.id)
        file = discord.File(io.BytesIO(text.encode("utf-8")), filename=EXPORT_NAME)
        await interaction.response.send_message(
            f"Your reading list: {count} paper{'s' * (count != 1)} as BibTeX (Zotero: File → Import; JabRef: "
            "File → Import into current library).",
            file=file,
            ephemeral=True,
        )


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(SavedCog(bot))

"""`saved --user ID [--bibtex]`: a member's reading list from the command line (newest first), or as BibTeX to
import into Zotero or JabRef (`> saved.bib`)."""

from __future__ import annotations

from bot.cli.common import require_database
from bot.clock import Clock
from bot.config import Settings
from bot.context import open_context


async def cmd_saved(settings: Settings, user: int, bibtex: bool, clock: Clock | None) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        saved = ctx.services.saved
        if bibtex:
            text, _count = await saved.bibtex(user)  # EmptyList says what to do
            print(text, end="")
            return 0
        listed = await saved.everything(user)
    if not listed:
        print(f"Member {user} has saved no papers.")
        return 0
    print(f"{len(listed)} saved paper{'s' * (len(listed) != 1)} of member {user}, newest first:")
    for item in listed:
        paper = item.paper
        print(f"  {item.saved_at.date().isoformat()}  {paper.arxiv_id}  {' '.join(paper.title.split())}")
    return 0

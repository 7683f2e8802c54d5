"""A member's reading list: ⭐ Save on a card, /saved, /saved remove, /saved export (BibTeX), and the CLI."""

from __future__ import annotations

from bot.clock import Clock
from bot.models import SavedPaper, split_arxiv_id
from bot.render.bibtex import bibtex_entries
from bot.services.ratings import CardActionError, PaperGone
from bot.store import Store

SAVED_PAGE = 200  # papers read per round trip when exporting a whole list


class NotAnArxivId(CardActionError):
    def __init__(self, text: str) -> None:
        super().__init__(
            f"“{text[:100]}” is not an arXiv id. Give one of /saved's ids, e.g. 2401.12345 or an arxiv.org link."
        )


class NotSaved(CardActionError):
    def __init__(self, arxiv_id: str) -> None:
        super().__init__(f"{arxiv_id} is not on your reading list: /saved shows what is.")


class EmptyList(CardActionError):
    def __init__(self) -> None:
        super().__init__("Your reading list is empty: press ⭐ Save on a paper's card to add it.")


class SavedService:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def save(self, member_id: int, arxiv_id: str) -> bool:
        """Save a stored paper; False when it was saved already. Raises PaperGone."""
        try:
            return await self.store.saved.save(member_id, arxiv_id, self.clock.now())
        except LookupError:
            raise PaperGone(arxiv_id) from None

    async def remove(self, member_id: int, text: str) -> str:
        """Take a paper (an id or link, any version) off the list; returns its id. Raises NotAnArxivId or
        NotSaved."""
        try:
            arxiv_id, _version = split_arxiv_id(text.strip())
        except ValueError:
            raise NotAnArxivId(text) from None
        if not await self.store.saved.remove(member_id, arxiv_id):
            raise NotSaved(arxiv_id)
        return arxiv_id

    async def newest(self, member_id: int, *, limit: int, offset: int = 0) -> list[SavedPaper]:
        return await self.store.saved.newest(member_id, limit=limit, offset=offset)

    async def count(self, member_id: int) -> int:
        return await self.store.saved.count(member_id)

    async def everything(self, member_id: int) -> list[SavedPaper]:
        """The whole list, newest first, read a page at a time."""
        found: list[SavedPaper] = []
        while page := await self.store.saved.newest(member_id, limit=SAVED_PAGE, offset=len(found)):
            found.extend(page)
            if len(page) < SAVED_PAGE:
                break
        return found

    async def bibtex(self, member_id: int) -> tuple[str, int]:
        """The list as BibTeX (newest first) and how many entries it holds. Raises EmptyList."""
        saved = await self.everything(member_id)
        if not saved:
            raise EmptyList()
        return bibtex_entries(s.paper for s in saved), len(saved)

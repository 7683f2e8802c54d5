"""Pages of a long answer behind ◀ / ▶ buttons that only the person who asked can turn."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import discord

from bot.render import CONTENT_LIMIT, clip, inert_fit

PAGE_TIMEOUT = 600.0  # seconds without a click before the buttons go grey
# Pages kept turnable at once, per bot: each live paginator holds its pages and interaction in memory until its
# timeout, so a busy server's searches (455 in ten minutes of the 1M benchmark) grew the bot without bound. Past
# this, the oldest goes grey early.
MAX_LIVE_PAGINATORS = 200
_live: weakref.WeakKeyDictionary[discord.Client, deque[Paginator]] = weakref.WeakKeyDictionary()
_greying: set[asyncio.Task[None]] = set()  # held until done (the loop keeps only weak references to tasks)
NOT_YOURS = "Only the person who ran the command can turn pages. Run it yourself to get your own copy."


def inline_text(text: str, limit: int) -> str:
    """User-given text (topic names, queries) shown inside markdown: one line, escaped, unable to ping,
    clipped."""
    return inert_fit(" ".join(text.split()), limit)


@dataclass(frozen=True, slots=True)
class Page:
    content: str | None = None
    embeds: tuple[discord.Embed, ...] = ()
    # Components shown with this page only, in rows 0-3 (the page buttons take row 4): e.g. the card actions of
    # the papers it lists. They answer their own clicks (persistent items with custom ids), not the paginator.
    items: tuple[discord.ui.Item[discord.ui.View], ...] = ()

    def message_kwargs(self) -> dict[str, Any]:
        # Both always given, so turning to a page replaces what the previous one showed.
        return {"content": self.content, "embeds": list(self.embeds)}


def pack_lines(
    header: str, entries: Sequence[str], *, per_page: int, limit: int = CONTENT_LIMIT
) -> list[str]:
    """Join entries into page texts of at most `per_page` entries and `limit` characters, header first.

    Entries stay whole unless one alone cannot fit, which is then clipped."""
    room = limit - len(header) - 1 if header else limit
    pages: list[list[str]] = [[]]
    used = 0
    for entry in entries:
        entry = clip(entry, room)
        current = pages[-1]
        extra = len(entry) + (1 if current else 0)
        if current and (len(current) >= per_page or used + extra > room):
            pages.append([])
            current, extra = pages[-1], len(entry)
            used = 0
        current.append(entry)
        used += extra
    return ["\n".join([header, *lines]) if header else "\n".join(lines) for lines in pages]


class Paginator(discord.ui.View):
    """◀ / page counter / ▶ over fixed pages. Build it with at least two pages; one page needs no buttons."""

    def __init__(self, pages: Sequence[Page], *, author_id: int, timeout: float = PAGE_TIMEOUT) -> None:
        super().__init__(timeout=timeout)
        if not pages:
            raise ValueError("a paginator needs at least one page")
        self.pages = list(pages)
        self.author_id = author_id
        self.index = 0
        # The latest interaction on the message: its token (15 minutes) edits the message at timeout.
        self.last_interaction: discord.Interaction | None = None
        self._buttons = (self.previous_page, self.counter, self.next_page)
        if any(page.items for page in self.pages):
            for button in self._buttons:  # under the pages' own rows
                self.remove_item(button)
                button.row = 4
                self.add_item(button)
        self._shown: list[discord.ui.Item[discord.ui.View]] = []
        self._update_buttons()

    @property
    def current(self) -> Page:
        return self.pages[self.index]

    def is_author(self, user_id: int) -> bool:
        return user_id == self.author_id

    def turn(self, step: int) -> Page:
        """Move `step` pages (clamped to the first and last) and return the page now shown."""
        self.index = max(0, min(len(self.pages) - 1, self.index + step))
        self._update_buttons()
        return self.current

    def _update_buttons(self) -> None:
        self.previous_page.disabled = self.index == 0
        self.next_page.disabled = self.index == len(self.pages) - 1
        self.counter.label = f"{self.index + 1}/{len(self.pages)}"
        for item in self._shown:
            self.remove_item(item)
        self._shown = list(self.current.items)
        for item in self._shown:
            self.add_item(item)

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        data: dict[str, object] = dict(interaction.data or {})
        if data.get("custom_id") in {getattr(item, "custom_id", None) for item in self._shown}:
            return False  # a page's own item: it answers the click itself, whoever clicks
        if self.is_author(interaction.user.id):
            return True
        await interaction.response.send_message(NOT_YOURS, ephemeral=True)
        return False

    async def _show(self, interaction: discord.Interaction, step: int) -> None:
        self.last_interaction = interaction
        page = self.turn(step)
        await interaction.response.edit_message(**page.message_kwargs(), view=self)

    @discord.ui.button(label="◀", style=discord.ButtonStyle.secondary)
    async def previous_page(
        self, interaction: discord.Interaction, button: discord.ui.Button[Paginator]
    ) -> None:
        await self._show(interaction, -1)

    @discord.ui.button(label="1/1", style=discord.ButtonStyle.secondary, disabled=True)
    async def counter(self, interaction: discord.Interaction, button: discord.ui.Button[Paginator]) -> None:
        """Only a label: it is always disabled, so Discord never sends a click for it."""

    @discord.ui.button(label="▶", style=discord.ButtonStyle.secondary)
    async def next_page(self, interaction: discord.Interaction, button: discord.ui.Button[Paginator]) -> None:
        await self._show(interaction, 1)

    async def on_timeout(self) -> None:
        for item in self.children:
            if isinstance(item, discord.ui.Button):
                item.disabled = True
        if self.last_interaction is not None:
            # Greyed-out buttons are cosmetic: a message deleted meanwhile is no reason to log an error.
            with contextlib.suppress(discord.HTTPException):
                await self.last_interaction.edit_original_response(view=self)


async def send_pages(
    interaction: discord.Interaction, pages: Sequence[Page], *, ephemeral: bool = False
) -> Paginator | None:
    """Answer with the first page (as a follow-up when the interaction was deferred); buttons only when
    there is more than one page. Returns the paginator, if any."""
    if not pages:
        raise ValueError("nothing to send")
    view = Paginator(pages, author_id=interaction.user.id) if len(pages) > 1 else None
    kwargs = pages[0].message_kwargs()
    if view is not None:
        kwargs["view"] = view
        view.last_interaction = interaction
        _keep_live(interaction.client, view)  # before the answer shows: the oldest is being greyed by then
    elif pages[0].items:
        kwargs["view"] = items_view = discord.ui.View(timeout=None)
        for item in pages[0].items:
            items_view.add_item(item)
    if interaction.response.is_done():
        await interaction.followup.send(**kwargs, ephemeral=ephemeral, wait=True)
    else:
        await interaction.response.send_message(**kwargs, ephemeral=ephemeral)
    if view is None and "view" in kwargs:
        kwargs["view"].stop()  # persistent items: nothing to keep for this message
    return view


def _keep_live(client: discord.Client, view: Paginator) -> None:
    live = _live.setdefault(client, deque())
    live.append(view)
    while len(live) > MAX_LIVE_PAGINATORS:
        oldest = live.popleft()
        if not oldest.is_finished():
            oldest.stop()  # forgotten by discord.py's view store: its pages can go
            # Greyed in the background: the answer being sent must not wait for another message's edit.
            greying = asyncio.create_task(_grey(oldest))
            _greying.add(greying)
            greying.add_done_callback(_greying.discard)


async def greying_done() -> None:
    """Return once every paginator pushed out so far is greyed (for a test, or a clean shutdown)."""
    await asyncio.gather(*_greying)


async def _grey(view: Paginator) -> None:
    with contextlib.suppress(discord.HTTPException, aiohttp.ClientError, RuntimeError):  # cosmetic, and at
        await view.on_timeout()  # shutdown the session may be gone

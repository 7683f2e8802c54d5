"""The card's action components: 👍 / 👎 (does it belong in the topic?), ⭐ Save and Similar.

They are persistent: everything a click needs is in the component's custom id (kind, topic, paper), so a click
on a card posted before a restart works, and no view is kept in memory. cogs/cards.py registers the
`discord.ui.DynamicItem`s that parse these ids; this module only writes them, within Discord's limits: a card
gets one row of four buttons under its link buttons; a digest (up to ten papers) gets one select menu per
action listing its papers (four rows), where ten rows of buttons would not fit in a message's five."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

import discord

from bot.models import Paper
from bot.render.limits import (
    CUSTOM_ID_LIMIT,
    SELECT_OPTION_LIMIT,
    SELECT_OPTIONS,
    SELECT_PLACEHOLDER_LIMIT,
)
from bot.render.text import readable_text, safe_clip

ActionKind = Literal["up", "down", "save", "similar"]
KINDS: Final[tuple[ActionKind, ...]] = ("up", "down", "save", "similar")
ANY_TOPIC: Final = 0  # the topics the card's channel follows that hold the paper, found when clicked

_ARXIV_ID = r"(?P<paper>[A-Za-z0-9.\-/]{1,40})"
_ID = re.compile(_ARXIV_ID)
# kind, topic id (0: the channel's followed topics), paper: "pw:up:0:2401.12345"
CARD_ACTION: Final = rf"pw:(?P<kind>up|down|save|similar):(?P<topic>[0-9]{{1,19}}):{_ARXIV_ID}"
# a digest's select menu: kind and topic; the paper is the option chosen
DIGEST_ACTION: Final = r"pw:pick:(?P<kind>up|down|save|similar):(?P<topic>[0-9]{1,19})"

_BUTTONS: Final[dict[ActionKind, tuple[str, str | None, discord.ButtonStyle]]] = {
    "up": ("👍", None, discord.ButtonStyle.secondary),
    "down": ("👎", None, discord.ButtonStyle.secondary),
    "save": ("⭐", "Save", discord.ButtonStyle.secondary),
    "similar": ("🔎", "Similar", discord.ButtonStyle.secondary),
}
_PLACEHOLDERS: Final[dict[ActionKind, str]] = {
    "up": "👍 Belongs in this topic: pick a paper",
    "down": "👎 Not this topic: pick a paper",
    "save": "⭐ Save for later: pick a paper",
    "similar": "🔎 Similar papers: pick a paper",
}


def action_id(kind: ActionKind, arxiv_id: str, topic_id: int = ANY_TOPIC) -> str:
    custom_id = f"pw:{kind}:{topic_id}:{arxiv_id}"
    if len(custom_id) > CUSTOM_ID_LIMIT:  # arXiv ids are at most ~20 characters: never in practice
        raise ValueError(f"custom id {custom_id!r} is longer than {CUSTOM_ID_LIMIT}")
    return custom_id


def digest_action_id(kind: ActionKind, topic_id: int = ANY_TOPIC) -> str:
    return f"pw:pick:{kind}:{topic_id}"


def action_button(
    kind: ActionKind, arxiv_id: str, topic_id: int = ANY_TOPIC, *, row: int | None = None
) -> discord.ui.Button[discord.ui.View]:
    emoji, label, style = _BUTTONS[kind]
    return discord.ui.Button(
        style=style, emoji=emoji, label=label, custom_id=action_id(kind, arxiv_id, topic_id), row=row
    )


def add_card_actions(view: discord.ui.View, paper: Paper, *, row: int = 1) -> None:
    """The four action buttons, on their own row of the card's view (none for a paper whose id is not an
    arXiv id: a click could not name it)."""
    if not _ID.fullmatch(paper.arxiv_id):
        return
    for kind in KINDS:
        view.add_item(action_button(kind, paper.arxiv_id, row=row))


def action_select(
    kind: ActionKind, papers: Sequence[Paper], topic_id: int = ANY_TOPIC
) -> discord.ui.Select[discord.ui.View]:
    """One action over the papers of a message: each option a paper (its title, its id as the value)."""
    if not 0 < len(papers) <= SELECT_OPTIONS:
        raise ValueError(f"a select menu lists 1 to {SELECT_OPTIONS} papers, not {len(papers)}")
    options = [
        discord.SelectOption(
            label=safe_clip(f"{i}. {readable_text(p.title, 2 * SELECT_OPTION_LIMIT)}", SELECT_OPTION_LIMIT),
            value=p.arxiv_id,
            description=f"arXiv:{p.arxiv_id}"[:SELECT_OPTION_LIMIT],
        )
        for i, p in enumerate(papers, start=1)
    ]
    return discord.ui.Select(
        custom_id=digest_action_id(kind, topic_id),
        placeholder=_PLACEHOLDERS[kind][:SELECT_PLACEHOLDER_LIMIT],
        options=options,
        min_values=1,
        max_values=1,
    )


def digest_view(papers: Sequence[Paper]) -> discord.ui.View:
    """A digest's actions: one select menu per kind, each listing the digest's papers (those with an arXiv
    id; no menus when none has)."""
    view = discord.ui.View(timeout=None)
    papers = [p for p in papers if _ID.fullmatch(p.arxiv_id)]
    if not papers:
        return view
    for row, kind in enumerate(KINDS):
        select = action_select(kind, papers)
        select.row = row
        view.add_item(select)
    return view

"""The card's meta line says how arXiv announced the paper's version, when the store knows."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from bot.models import Announcement, Paper
from bot.render import paper_console, paper_embed
from tests.factories import make_paper

DAY = date(2026, 11, 24)
PAPER = make_paper(1, categories=("cs.CV", "cs.LG"), primary_category="cs.CV")


def announced(paper: Paper, kind: str, category: str = "cs.LG", version: int | None = None) -> Paper:
    seen = Announcement(paper.arxiv_id, version or paper.version, category, kind, DAY)  # type: ignore[arg-type]
    return replace(paper, announced=seen)


def meta_line(paper: Paper) -> str:
    description = paper_embed(paper).description or ""
    return next(line for line in description.splitlines() if line.startswith("2026-"))


@pytest.mark.parametrize(
    ("paper", "shown"),
    [
        (announced(PAPER, "new", "cs.CV"), "2026-11-16 · **cs.CV** (+cs.LG) · New in cs.CV"),
        (announced(PAPER, "cross"), "2026-11-16 · **cs.CV** (+cs.LG) · Cross-listed from cs.CV"),
        (announced(replace(PAPER, version=3), "replace"), "2026-11-16 · **cs.CV** (+cs.LG) · Updated (v3)"),
        (
            announced(replace(PAPER, version=2), "replace-cross"),
            "2026-11-16 · **cs.CV** (+cs.LG) · Updated (v2)",
        ),
        (PAPER, "2026-11-16 · **cs.CV** (+cs.LG)"),  # never seen in the feed: as before
        # an announcement of another version does not describe this one: the version is shown as before
        (announced(replace(PAPER, version=2), "new", version=1), "2026-11-16 · **cs.CV** (+cs.LG) · v2"),
    ],
    ids=["new", "cross", "replace", "replace-cross", "unknown", "other-version"],
)
def test_the_meta_line_names_the_announcement(paper: Paper, shown: str) -> None:
    assert meta_line(paper) == shown


def test_the_terminal_card_names_it_too_and_markdown_in_a_category_is_escaped() -> None:
    assert "· New in cs.CV ·" in paper_console(announced(PAPER, "new", "cs.CV"))
    odd = announced(PAPER, "new", "cs_LG*")
    assert r"New in cs\_LG\*" in meta_line(odd)


def test_control_characters_in_a_category_never_reach_the_card() -> None:
    assert "New in cs.LGx ·" in paper_console(announced(PAPER, "new", "cs.LG\x01x"))

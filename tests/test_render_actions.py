"""The card's action components stay within Discord's component limits on every card shape, and their custom
ids parse back with the templates the bot registers."""

from __future__ import annotations

import re

import discord
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render import CARD_ACTION, DIGEST_ACTION, digest_view, paper_view
from bot.render.actions import action_id, action_select
from tests.factories import make_paper

OLD_STYLE = "math-ph/0701001"


def _components(view: discord.ui.View) -> list[dict[str, object]]:
    return [c for row in view.to_components() for c in row["components"]]


@pytest.mark.parametrize("arxiv_id", ["2401.12345", OLD_STYLE, "2611.10001"])
def test_a_cards_custom_ids_parse_back(arxiv_id: str) -> None:
    view = paper_view(make_paper(arxiv_id=arxiv_id))
    rows = view.to_components()
    assert len(rows) == 2 and len(rows[1]["components"]) == 4
    for component in rows[1]["components"]:
        match = re.fullmatch(CARD_ACTION, component["custom_id"])
        assert match is not None and match["paper"] == arxiv_id and match["topic"] == "0"
        assert len(component["custom_id"]) <= 100


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=600), min_size=1, max_size=10))
def test_a_digest_of_up_to_ten_papers_fits_four_menus(titles: list[str]) -> None:
    papers = [make_paper(n, title=title) for n, title in enumerate(titles)]
    view = digest_view(papers)
    rows = view.to_components()
    assert len(rows) == 4  # of a message's five rows
    for row in rows:
        [menu] = row["components"]
        assert re.fullmatch(DIGEST_ACTION, menu["custom_id"])
        assert len(menu["placeholder"]) <= 150
        options = menu["options"]
        assert [o["value"] for o in options] == [p.arxiv_id for p in papers]
        assert all(1 <= len(o["label"]) <= 100 and len(o.get("description", "")) <= 100 for o in options)


def test_ids_that_are_not_arxiv_ids_get_no_actions() -> None:
    assert len(_components(paper_view(make_paper(arxiv_id="not an id @everyone")))) == 0
    assert digest_view([make_paper(arxiv_id="x y")]).to_components() == []


def test_limits_are_enforced_not_assumed() -> None:
    with pytest.raises(ValueError):
        action_id("up", "9" * 100)
    with pytest.raises(ValueError):
        action_select("up", [make_paper(n) for n in range(26)])

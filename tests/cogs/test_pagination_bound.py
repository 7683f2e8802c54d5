"""Paginated answers kept turnable are bounded per bot: past the bound the oldest goes grey early, so a busy
server's searches do not keep every answer's pages in memory for ten minutes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

import cogs.pagination
from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.harness import running_paperbot
from tests.cogs.world import Env, answer, module_loop, store_as_polled
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    async with FakeDiscord() as fake_discord, LoopbackArxiv() as fake_arxiv:
        path = tmp_path_factory.mktemp("pagination")
        async with running_paperbot(path, fake_discord, fake_arxiv, clock=FakeClock()) as bot:
            yield Env(fake_discord, fake_arxiv, bot)


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The paginator's buttons (type 2), not the card actions' menus a page of papers carries too."""
    return [c for row in message["components"] for c in row["components"] if c["type"] == 2]


def menus(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for row in message["components"] for c in row["components"] if c["type"] == 3]


@module_loop
async def test_past_the_bound_the_oldest_pages_go_grey(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cogs.pagination, "MAX_LIVE_PAGINATORS", 2)
    server = env.new_server()
    await store_as_polled(env.bot, [make_paper(400 + i, title=f"Pangolin scale study {i}") for i in range(7)])
    await env.bot.services.topics.save_custom(server.guild.id, "Pangolins", "ti:pangolin")
    runs, answers = [], []
    for _ in range(3):  # one after the other: the first is the oldest
        runs.append(await server.run("latest", topic="Pangolins", count=7))
        answers.append(await answer(runs[-1]))
    assert all(not buttons(a)[2].get("disabled", False) for a in answers)  # ▶ turns on each, as sent
    # the third answer pushed the first out: its buttons are greyed, the two newest still turn
    await asyncio.wait_for(cogs.pagination.greying_done(), 30)  # greyed in the background
    [greyed] = runs[0].edits
    assert [(b["label"], b["disabled"]) for b in buttons(greyed)] == [("◀", True), ("1/2", True), ("▶", True)]
    assert [run.edits for run in runs[1:]] == [[], []]  # the two newest still turn
    assert env.discord.violations == []

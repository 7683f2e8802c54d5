"""/search through the real bot and the loopback Discord when ranking by relevance cannot finish within the search's
time budget: SQLite stops the ranking on its read connection, and the answer lists the newest true matches, newest
first, saying why and what to do; the next search, on the same connections, is ranked as before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio

from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.harness import running_paperbot
from bot.models import Paper
from bot.store.database import READERS
from tests.cogs.world import Env, Server, answer, module_loop, store_as_polled
from tests.database_clock import DatabaseClock
from tests.factories import BASE_TIME, make_paper
from tests.fakes.checked_discord import FakeDiscord

UNRANKED = "ranked newest first: too many papers match to rank by relevance in time"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    async with FakeDiscord() as fake_discord, LoopbackArxiv() as fake_arxiv:
        path = tmp_path_factory.mktemp("search_budget")
        async with running_paperbot(path, fake_discord, fake_arxiv, clock=DatabaseClock()) as bot:
            yield Env(fake_discord, fake_arxiv, bot)


@pytest.fixture
def server(env: Env) -> Server:
    return env.new_server()


def margays() -> list[Paper]:
    """400 papers, newest first: three in four say "margay" (in the title 1-4 times), the rest "serval"."""
    return [
        make_paper(
            30000 + n,
            title=("Margay " * (1 + n % 4) if n % 4 else "Serval ") + f"field notes {n}",
            abstract=("A margay" if n % 4 else "A serval") + f" seen at night, site {n}.",
            published=BASE_TIME - timedelta(hours=n),
        )
        for n in range(400)
    ]


def listed(content: str) -> list[str]:
    """The arXiv ids of the papers an answer lists, in its order."""
    return sorted((p.arxiv_id for p in margays() if p.arxiv_id in content), key=content.index)


@module_loop
async def test_a_search_out_of_time_lists_the_newest_true_matches_and_the_next_is_ranked(
    server: Server,
) -> None:
    bot = server.env.bot
    clock = bot.clock
    assert isinstance(clock, DatabaseClock)
    await store_as_polled(bot, list(reversed(margays())))  # oldest first, as polls store them

    on_time = (await answer(await server.run("search", query="marg*")))["content"]
    assert "best match first" in on_time and UNRANKED not in on_time
    titles = {p.arxiv_id: p.title for p in margays()}
    best = [titles[i].count("Margay") for i in listed(on_time)]
    assert best == [4] * 5  # "Margay" four times: the best matches, though not the newest

    clock.slow = True  # each look SQLite's progress handler takes at the clock finds a second gone
    late = (await answer(await server.run("search", query="marg*")))["content"]
    clock.slow = False
    assert UNRANKED in late and "Narrow the query (a rarer word, a longer prefix" in late
    newest = [p.arxiv_id for p in margays() if p.title.startswith("Margay")]
    assert listed(late) == newest[: len(listed(late))] and len(listed(late)) == 5  # the first page's five
    assert "2611.30004" not in late  # a serval paper, newer than most: never a wrong hit
    assert clock.looks_from_the_database > 0

    # The clock moved past that search's deadline: one left on a read connection would stop the next searches.
    for _ in range(READERS):
        again = (await answer(await server.run("search", query="marg*")))["content"]
        assert again == on_time
    assert server.env.discord.violations == []

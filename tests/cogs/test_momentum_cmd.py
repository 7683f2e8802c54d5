"""/momentum through the real bot and the loopback Discord, over a generated history with a fixed "now".

The clock stands at Friday 2026-11-20 12:00 UTC, so the four-week window is Oct 23 - Nov 19 and the one
before it Sep 25 - Oct 22. One bot serves the module; each test gets a fresh server.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import EPHEMERAL
from bot.loopback.harness import running_paperbot
from bot.models import Paper
from bot.momentum import Momentum
from cogs.momentum import change_text
from tests.cogs.world import Env, Server, answer, module_loop
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
WINDOW = datetime(2026, 10, 23, tzinfo=UTC)  # start of the last four complete weeks
BEFORE = datetime(2026, 9, 25, tzinfo=UTC)  # start of the four weeks before
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def rl_papers() -> list[Paper]:
    """RL Post-Training: 49 in the window, 16 before; plus some outside both windows."""
    now_window = [
        make_paper(i, title=f"GRPO for reasoning, study {i}", published=WINDOW + timedelta(hours=13 * i))
        for i in range(49)
    ]
    before = [
        make_paper(
            100 + i,
            title=f"RLHF with verifiable rewards, study {i}",
            published=BEFORE + timedelta(hours=40 * i),
        )
        for i in range(16)
    ]
    older = [
        make_paper(200 + i, title=f"RLVR early work {i}", published=BEFORE - timedelta(days=3 + i))
        for i in range(4)
    ]
    today = [
        make_paper(300 + i, title=f"GRPO today {i}", published=NOW - timedelta(hours=2 + i)) for i in range(3)
    ]
    return now_window + before + older + today


def other_papers() -> list[Paper]:
    """51 unrelated papers in the window (49 of 100 new papers are RL Post-Training), and a shrinking
    'zebrafish' field: 5 in the window, 20 before."""
    unrelated = [
        make_paper(
            400 + i, title=f"Graph colouring bounds, part {i}", published=WINDOW + timedelta(hours=12 * i)
        )
        for i in range(51)
    ]
    zebra_now = [
        make_paper(
            500 + i,
            title=f"Zebrafish fins {i}",
            published=WINDOW + timedelta(days=2 * i),
            primary_category="q-bio.TO",
            categories=("q-bio.TO",),
        )
        for i in range(5)
    ]
    zebra_before = [
        make_paper(
            600 + i,
            title=f"Zebrafish hearts {i}",
            published=BEFORE + timedelta(days=i),
            primary_category="q-bio.TO",
            categories=("q-bio.TO",),
        )
        for i in range(20)
    ]
    return unrelated + zebra_now + zebra_before


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    async with FakeDiscord() as fake_discord, LoopbackArxiv() as fake_arxiv:
        path = tmp_path_factory.mktemp("momentum")
        async with running_paperbot(path, fake_discord, fake_arxiv, clock=FakeClock(NOW)) as bot:
            papers = rl_papers() + other_papers()
            await bot.ctx.intake.store_papers(papers, announce=True)  # exactly as a poll stores a page
            yield Env(fake_discord, fake_arxiv, bot)


@pytest.fixture
def server(env: Env) -> Server:
    return env.new_server()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@module_loop
async def test_momentum_of_a_topic_gives_the_sentence_sparkline_and_chart(server: Server) -> None:
    interaction = await server.run("momentum", topic="RL Post-Training")
    message = await answer(interaction)
    assert interaction.callback_type == 5 and not message["flags"] & EPHEMERAL  # deferred, public
    [embed] = message["embeds"]
    assert embed["title"] == "RL Post-Training"
    assert embed["description"].startswith(
        "49 papers in the last four weeks, up 206% on the four weeks before. 49% of all new papers."
    )
    assert "`" in embed["description"] and "▁" in embed["description"]  # the sparkline
    assert "Oct 23 – Nov 19, 2026" in embed["footer"]["text"]
    assert embed["image"]["url"] == "attachment://momentum.png"
    assert [a["filename"] for a in message["attachments"]] == ["momentum.png"]

    [upload] = [
        r
        for r in server.env.discord.requests_to("POST", "/webhooks/{app}/{token}")
        if interaction.token in r.path
    ]
    [png] = upload.files
    assert png.filename == "momentum.png" and png_size(png.data) == (1000, 450)
    assert server.env.discord.violations == []


@module_loop
async def test_momentum_with_a_shorter_window(server: Server) -> None:
    message = await answer(await server.run("momentum", topic="rl-post-training", weeks=1))
    # Nov 13-19 holds studies 39..48 of the 13-hourly run (Nov 6-12: 26..38) and 9 unrelated papers.
    assert message["embeds"][0]["description"].startswith(
        "10 papers in the last week, down 23% on the week before. 53% of all new papers."
    )
    assert server.env.discord.violations == []


@module_loop
async def test_momentum_of_an_unknown_topic_is_a_private_error(server: Server) -> None:
    interaction = await server.run("momentum", topic="Underwater basket weaving")
    reply = await answer(interaction)
    assert interaction.callback_type == 4 and reply["flags"] & EPHEMERAL
    assert "no topic named" in reply["content"]
    assert server.env.discord.violations == []


@module_loop
async def test_momentum_without_topic_ranks_this_servers_follows(server: Server, env: Env) -> None:
    await env.bot.services.topics.save_custom(
        server.guild.id, "Zebrafish $\\undefined$ @everyone", "ti:zebrafish"
    )
    await server.follow("Zebrafish $\\undefined$ @everyone")
    await server.follow("RL Post-Training")
    await server.follow("RL Post-Training")  # the same topic twice counts once

    message = await answer(await server.run("momentum"))
    [embed] = message["embeds"]
    lines = embed["description"].splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("1. **RL Post-Training** · 49 papers · +206% · `")
    assert lines[1].startswith("2. **Zebrafish $\\\\undefined$ @\u200beveryone** · 5 papers · −75% · `")
    assert message["components"] == []  # one page, no buttons

    # The hostile name also reaches the chart title: TeX in it must not break matplotlib.
    chart = await answer(await server.run("momentum", topic="Zebrafish $\\undefined$ @everyone"))
    assert chart["embeds"][0]["description"].startswith("5 papers in the last four weeks, down 75%")
    assert "@everyone" not in chart["embeds"][0]["title"]
    assert env.discord.violations == []


@module_loop
async def test_momentum_without_topic_when_nothing_is_followed_gives_a_hint(server: Server) -> None:
    interaction = await server.run("momentum")
    reply = await answer(interaction)
    assert interaction.callback_type == 4 and reply["flags"] & EPHEMERAL
    assert "follows no topics" in reply["content"] and "/follow" in reply["content"]
    assert server.env.discord.violations == []


@module_loop
async def test_momentum_topic_autocomplete_offers_at_most_25(server: Server) -> None:
    everything = await server.env.discord.autocomplete(
        server.guild, server.channel, server.alice, "momentum", [{"name": "topic", "value": ""}]
    )
    assert len(everything) == 25
    typed = await server.env.discord.autocomplete(
        server.guild, server.channel, server.alice, "momentum", [{"name": "topic", "value": "rl post"}]
    )
    assert typed[0]["name"] == "RL Post-Training"
    assert server.env.discord.violations == []


def test_change_text_names_growth_decline_and_small_counts() -> None:
    def momentum(current: int, previous: int) -> Momentum:
        return Momentum("t", 4, NOW, NOW, current, previous, 100, ("cs.LG",), False, ())

    assert change_text(momentum(49, 16)) == "+206%"
    assert change_text(momentum(5, 20)) == "−75%"
    assert change_text(momentum(3, 0)) == "new"
    assert change_text(momentum(0, 0)) == "no papers"
    assert change_text(momentum(3, 2)) == "+50% (few papers)"


@pytest.mark.parametrize("weeks", [0, -3, 53, 1_000_000_000])
@module_loop
async def test_weeks_outside_1_to_52_get_a_private_answer_saying_what_is_allowed(
    server: Server, weeks: int
) -> None:
    # Discord's own range check is a hint to clients; a crafted request reaches the bot with any number.
    await server.follow("RL Post-Training")
    for options in ({"topic": "RL Post-Training", "weeks": weeks}, {"weeks": weeks}):
        interaction = await server.run("momentum", **options)
        reply = await answer(interaction)
        assert interaction.callback_type == 4 and reply["flags"] & EPHEMERAL
        assert "from 1 to 52" in reply["content"] and str(weeks) in reply["content"]
    assert server.env.discord.violations == []

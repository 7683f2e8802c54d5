"""A card's buttons keep working after a restart: a new process (here a new bot on the same database) answers
a click on a card the previous one posted, since the custom id carries everything."""

from __future__ import annotations

from pathlib import Path

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import EPHEMERAL
from bot.loopback.discord.records import SEND_MESSAGES
from bot.loopback.harness import running_paperbot
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.peek import store_of


async def test_a_card_posted_before_a_restart_still_answers_its_buttons(
    tmp_path: Path, discord: FakeDiscord, arxiv: LoopbackArxiv, clock: FakeClock
) -> None:
    guild = discord.add_guild("Lab")
    channel = discord.add_text_channel(guild, "papers")
    alice = discord.add_member(guild, "alice", permissions=SEND_MESSAGES)
    paper = make_paper(1, title="Capybara swarms")
    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
        follows = bot.services.follows
        await follows.follow(await follows.plan(guild.id, channel.id, "Capybara", query="ti:capybara"))
        await bot.ctx.intake.store_papers([paper], announce=True)
        assert (await bot.worker.deliver_once()).sent == 1
    [card] = discord.messages(channel.id)

    async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as restarted:
        for kind in ("up", "save"):
            click = await discord.click(card, f"pw:{kind}:0:{paper.arxiv_id}", alice)
            response = await click.wait_response()
            assert response["type"] == 4 and response["data"]["flags"] & EPHEMERAL
        store = store_of(restarted)
        assert await store.saved.count(alice.id) == 1
        assert [g for g, _ in await store.ratings.rated_topics()] == [guild.id]

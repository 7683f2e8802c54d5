"""A card's buttons and a digest's menus through the real bot and the loopback Discord: each click answered
privately, ratings and saves stored once, the clicks a member cannot act on answered clearly and never
logged as errors, /saved and /ratings."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator
from typing import Any

import bibtexparser
import pytest
import pytest_asyncio

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import EPHEMERAL, Interaction
from bot.loopback.harness import running_paperbot
from bot.models import Mode, Paper
from tests.cogs.world import MEMBER, Env, Server, answer, module_loop, store_as_polled
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.peek import store_of

MANAGE_GUILD = 1 << 5


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    async with FakeDiscord() as fake_discord, LoopbackArxiv() as fake_arxiv:
        path = tmp_path_factory.mktemp("cards")
        async with running_paperbot(path, fake_discord, fake_arxiv, clock=FakeClock()) as bot:
            yield Env(fake_discord, fake_arxiv, bot)


@pytest.fixture
def server(env: Env) -> Server:
    return env.new_server()


@pytest.fixture(autouse=True)
def no_errors_logged(caplog: pytest.LogCaptureFixture) -> Any:
    """No click, however wrong, leaves an error (or discord.py's "Ignoring exception") in the log."""
    caplog.set_level(logging.WARNING)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or "Ignoring exception" in r.getMessage()]
    assert bad == []


async def _posted_card(
    server: Server, word: str, n: int, *, mode: Mode = "each"
) -> tuple[Paper, dict[str, Any]]:
    """#papers follows the server's own topic `word`; a paper of it is polled and posted: (paper, message)."""
    bot = server.env.bot
    follows = bot.services.follows
    await follows.follow(
        await follows.plan(server.guild.id, server.channel.id, word.title(), query=f"ti:{word}", mode=mode)
    )
    paper = make_paper(n, title=f"{word.title()} policies for reasoning {n}")
    await store_as_polled(bot, [paper])
    if mode == "each":
        assert (await bot.worker.deliver_once()).sent >= 1
    message = server.env.discord.messages(server.channel.id)[-1]
    return paper, message


def _ids(message: dict[str, Any]) -> list[str]:
    return [c.get("custom_id") or c.get("url") for row in message["components"] for c in row["components"]]


async def _private(interaction: Interaction) -> str:
    """The private answer to a click: at once (type 4), or a private "thinking" filled by a follow-up."""
    response = await interaction.wait_response()
    assert response["data"]["flags"] & EPHEMERAL, response
    if response["type"] == 5:
        [message] = await interaction.wait_followups(1)
        assert message["flags"] & EPHEMERAL
        return str(message["content"])
    assert response["type"] == 4
    return str(response["data"]["content"])


async def _ratings(server: Server, paper: Paper) -> list[tuple[int, int]]:
    rows = await store_of(server.env.bot).ratings.rated_topics()
    return [r for r in rows if r[0] == server.guild.id]


@module_loop
async def test_a_posted_card_carries_the_four_actions_and_a_vote_is_recorded_once(server: Server) -> None:
    paper, card = await _posted_card(server, "okapi", 1)
    pid = paper.arxiv_id
    assert _ids(card)[3:] == [f"pw:up:0:{pid}", f"pw:down:0:{pid}", f"pw:save:0:{pid}", f"pw:similar:0:{pid}"]
    fake, alice = server.env.discord, server.alice

    first = await _private(await fake.click(card, f"pw:up:0:{pid}", alice))
    assert first.startswith("👍 Thanks") and "**Okapi**" in first
    burst = await asyncio.gather(*[fake.click(card, f"pw:up:0:{pid}", alice) for _ in range(20)])
    texts = [await _private(i) for i in burst]
    assert all(t.startswith("👍 Already recorded") for t in texts)
    changed = await _private(await fake.click(card, f"pw:down:0:{pid}", alice))
    assert changed.startswith("👎 Changed your rating")

    store = store_of(server.env.bot)
    topic = await server.env.bot.services.topics.resolve(server.guild.id, "Okapi")
    [rated] = await store.ratings.rated(server.guild.id, topic.id)
    assert (rated.up, rated.down) == (0, 1)  # one row: alice's latest vote
    assert fake.violations == []


@module_loop
async def test_save_then_saved_list_export_and_remove(server: Server) -> None:
    paper, card = await _posted_card(server, "tapir", 2)
    fake, alice = server.env.discord, server.alice
    assert (await _private(await fake.click(card, f"pw:save:0:{paper.arxiv_id}", alice))).startswith(
        "⭐ Saved"
    )
    assert "Already" in await _private(await fake.click(card, f"pw:save:0:{paper.arxiv_id}", alice))

    listed = await answer(await server.run("saved list"))
    assert listed["flags"] & EPHEMERAL and f"/abs/{paper.arxiv_id}" in listed["content"]

    export = await server.run("saved export")
    response = await export.wait_response()
    assert response["data"]["flags"] & EPHEMERAL
    [attachment] = export.original["attachments"] if export.original else []
    assert attachment["filename"] == "paperwatch-saved.bib"
    [file] = [f for f in fake.requests[-1].files] or [None]
    assert file is not None
    entries = bibtexparser.parse_string(file.data.decode()).entries
    assert [e["eprint"] for e in entries] == [paper.arxiv_id] and entries[0]["archivePrefix"] == "arXiv"

    removed = await answer(await server.run("saved remove", id=f"https://arxiv.org/abs/{paper.arxiv_id}v2"))
    assert removed["content"] == f"Took {paper.arxiv_id} off your reading list."
    again = await answer(await server.run("saved remove", id=paper.arxiv_id))
    assert "is not on your reading list" in again["content"]
    empty = await answer(await server.run("saved export"))
    assert "empty" in empty["content"] and not empty["attachments"]
    assert fake.violations == []


@module_loop
async def test_similar_answers_privately_with_the_nearest_papers(server: Server) -> None:
    paper, card = await _posted_card(server, "pangolin", 3)
    others = [make_paper(40 + n, title=f"Pangolin policies for reasoning, part {n}") for n in range(7)]
    await store_as_polled(server.env.bot, others)
    text = await _private(
        await server.env.discord.click(card, f"pw:similar:0:{paper.arxiv_id}", server.alice)
    )
    assert text.startswith("**Similar to**")
    lines = text.splitlines()[1:]
    assert len(lines) == 5 and all("Pangolin policies" in line and "/abs/" in line for line in lines)
    assert paper.arxiv_id not in "\n".join(lines)


@module_loop
async def test_clicks_a_member_cannot_act_on_get_a_clear_private_answer(server: Server) -> None:
    paper, card = await _posted_card(server, "quokka", 4)
    env = server.env
    fake = env.discord
    stranger_server = env.new_server()
    stranger = stranger_server.alice  # a member of another server, clicking the card (crossposted there)
    text = await _private(await fake.click(card, f"pw:up:0:{paper.arxiv_id}", stranger))
    assert "not in any topic this server follows" in text
    assert await _ratings(stranger_server, paper) == []

    # A card whose paper the store no longer holds (another database, a card from before a restore).
    gone = copy.deepcopy(card)
    for row in gone["components"]:
        for c in row["components"]:
            if c.get("custom_id"):
                c["custom_id"] = c["custom_id"].replace(paper.arxiv_id, "2611.99999")
    for kind in ("up", "save", "similar"):
        text = await _private(await fake.click(gone, f"pw:{kind}:0:2611.99999", server.alice))
        assert "is not stored any more" in text and "/paper 2611.99999" in text

    # The follow (and with it the server's topic) removed: the card's 👍 has no topic left to rate.
    follows = env.bot.services.follows
    await follows.unfollow(await follows.plan_unfollow(server.guild.id, "Quokka"))
    text = await _private(await fake.click(card, f"pw:down:0:{paper.arxiv_id}", server.alice))
    assert "not in any topic this server follows" in text
    assert "Saved" in await _private(await fake.click(card, f"pw:save:0:{paper.arxiv_id}", server.alice))
    assert fake.violations == []


@module_loop
async def test_a_digest_gets_one_menu_per_action_and_a_pick_rates_that_paper(server: Server) -> None:
    bot = server.env.bot
    follows = bot.services.follows
    plan = await follows.plan(server.guild.id, server.channel.id, "Wombat", query="ti:wombat", mode="digest")
    await follows.follow(plan)
    papers = [make_paper(60 + n, title=f"Wombat burrows {n}") for n in range(10)]
    await store_as_polled(bot, papers)
    await bot.worker.deliver_digests(hour=plan.digest_hour)
    [digest] = server.env.discord.messages(server.channel.id)
    rows = digest["components"]
    assert [row["components"][0]["custom_id"] for row in rows] == [
        "pw:pick:up:0",
        "pw:pick:down:0",
        "pw:pick:save:0",
        "pw:pick:similar:0",
    ]
    assert all(len(row["components"][0]["options"]) == 10 for row in rows)
    picked = papers[3].arxiv_id
    text = await _private(await server.env.discord.click(digest, "pw:pick:down:0", server.alice, [picked]))
    assert text.startswith("👎 Thanks") and "**Wombat**" in text
    topic = await bot.services.topics.resolve(server.guild.id, "Wombat")
    [rated] = await store_of(bot).ratings.rated(server.guild.id, topic.id)
    assert rated.arxiv_id == picked and rated.down == 1


@module_loop
async def test_a_forum_post_rates_the_topic_its_forum_follows(server: Server) -> None:
    env = server.env
    forum = env.discord.add_forum_channel(server.guild, "reading")
    follows = env.bot.services.follows
    await follows.follow(await follows.plan(server.guild.id, forum.id, "Numbat", query="ti:numbat"))
    paper = make_paper(80, title="Numbat foraging")
    await store_as_polled(env.bot, [paper])
    await env.bot.worker.deliver_once()
    [thread] = env.discord.threads(forum.id)
    [starter] = env.discord.messages(int(thread["id"]))
    text = await _private(await env.discord.click(starter, f"pw:up:0:{paper.arxiv_id}", server.alice))
    assert text.startswith("👍 Thanks") and "**Numbat**" in text


@module_loop
async def test_paper_cards_carry_the_actions_too(server: Server) -> None:
    paper = make_paper(90, title="Kakapo song")
    await store_as_polled(server.env.bot, [paper])
    card = await answer(await server.run("paper", id=paper.arxiv_id))
    assert f"pw:save:0:{paper.arxiv_id}" in _ids(card)
    text = await _private(await server.env.discord.click(card, f"pw:save:0:{paper.arxiv_id}", server.alice))
    assert text.startswith("⭐ Saved")


@module_loop
async def test_ratings_show_and_reset_for_admins_only(server: Server) -> None:
    paper, card = await _posted_card(server, "dugong", 5)
    await _private(await server.env.discord.click(card, f"pw:down:0:{paper.arxiv_id}", server.alice))
    admin = server.env.discord.add_member(server.guild, "admin", permissions=MEMBER | MANAGE_GUILD)
    fake = server.env.discord

    refused = await answer(
        await fake.invoke(
            server.guild, server.channel, server.alice, "ratings show", [{"name": "topic", "value": "Dugong"}]
        )
    )
    assert refused["flags"] & EPHEMERAL and "Manage Server" in refused["content"]
    shown = await answer(
        await fake.invoke(
            server.guild, server.channel, admin, "ratings show", [{"name": "topic", "value": "Dugong"}]
        )
    )
    assert "1 on 1 papers" in shown["content"] and paper.arxiv_id in shown["content"]
    topics = await answer(await fake.invoke(server.guild, server.channel, admin, "topics"))
    assert "learns from 1 rating" in topics["embeds"][0]["description"]
    reset = await answer(
        await fake.invoke(
            server.guild, server.channel, admin, "ratings reset", [{"name": "topic", "value": "Dugong"}]
        )
    )
    assert reset["content"].startswith("Forgot 1 rating of **Dugong**")
    assert fake.violations == []

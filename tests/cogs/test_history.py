"""/latest, /search, /paper through the real bot and the loopback Discord; the paginator's logic directly.

One bot serves the whole module (a start costs seconds); each test gets a fresh server, so follows and
custom topics never leak between tests, and uses its own words and paper numbers in the shared store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import discord
import pytest
import pytest_asyncio
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import EPHEMERAL
from bot.loopback.discord.records import SEND_MESSAGES
from bot.loopback.harness import running_paperbot
from bot.models import HIGHLIGHT_END, HIGHLIGHT_START, Paper
from cogs.history import highlight, parse_since
from cogs.pagination import NOT_YOURS, Page, Paginator, pack_lines
from tests.cogs.world import Env, Server, answer, module_loop, store_as_polled
from tests.factories import BASE_TIME, make_paper
from tests.fakes.checked_discord import FakeDiscord

ZWSP = "\u200b"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    async with FakeDiscord() as fake_discord, LoopbackArxiv() as fake_arxiv:
        path = tmp_path_factory.mktemp("history")
        async with running_paperbot(path, fake_discord, fake_arxiv, clock=FakeClock()) as bot:
            yield Env(fake_discord, fake_arxiv, bot)


@pytest.fixture
def server(env: Env) -> Server:
    return env.new_server()


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for row in message["components"] for c in row["components"]]


def no_violations(env: Env) -> None:
    assert env.discord.violations == []


# ---- /latest ---------------------------------------------------------------------------------------------


@module_loop
async def test_latest_lists_the_newest_papers_of_a_topic_with_page_buttons(server: Server) -> None:
    bot = server.env.bot
    papers = [make_paper(100 + i, title=f"Axolotl limb study {i}") for i in range(7)]  # 100 is newest
    await store_as_polled(bot, [*papers, make_paper(120, title="Unrelated graph paper")])
    await bot.services.topics.save_custom(server.guild.id, "Axolotl Watch", "ti:axolotl")

    first = await answer(await server.run("latest", topic="Axolotl Watch"))
    lines = first["content"].splitlines()
    assert "Axolotl Watch" in lines[0] and "5 newest" in lines[0]
    assert [line.split(" ", 1)[0] for line in lines[1:]] == ["1.", "2.", "3.", "4.", "5."]
    assert [p.arxiv_id in lines[i + 1] for i, p in enumerate(papers[:5])] == [True] * 5
    assert not first["flags"] & EPHEMERAL  # public; one page: no page buttons, the papers' action menus
    assert [_menu_values(row) for row in first["components"]] == [[p.arxiv_id for p in papers[:5]]] * 4

    latest = await server.run("latest", topic="axolotl watch", count=7)
    paged = await answer(latest)
    assert paged["content"].count("\n") == 5  # header and the first five of seven
    *menus, pager = paged["components"]
    assert [_menu_values(row) for row in menus] == [[p.arxiv_id for p in papers[:5]]] * 4
    previous, counter, following = pager["components"]
    assert (previous["label"], previous["disabled"]) == ("◀", True)
    assert (counter["label"], counter["disabled"]) == ("1/2", True)
    assert (following["label"], following.get("disabled", False)) == ("▶", False)

    # Turning the page shows the next papers' menus; a menu answers whoever picks a paper, privately.
    fake = server.env.discord
    turn = await fake.click(paged, following["custom_id"], server.alice)
    turned = (await turn.wait_response())["data"]
    assert [_menu_values(row) for row in turned["components"][:4]] == [[p.arxiv_id for p in papers[5:]]] * 4
    bob = fake.add_member(server.guild, "bob", permissions=SEND_MESSAGES)
    saved = await (await fake.click(paged, "pw:pick:save:0", bob, [papers[1].arxiv_id])).wait_response()
    assert saved["type"] == 4 and saved["data"]["flags"] & EPHEMERAL and "Saved" in saved["data"]["content"]
    no_violations(server.env)


def _menu_values(row: dict[str, Any]) -> list[str]:
    [menu] = row["components"]
    return [option["value"] for option in menu["options"]]


@module_loop
async def test_latest_of_another_servers_topic_is_unknown_here(server: Server, env: Env) -> None:
    await env.bot.services.topics.save_custom(server.guild.id, "Private Okapi", "ti:okapi")
    other = env.discord.add_guild("Other lab")
    channel = env.discord.add_text_channel(other, "general")
    bob = env.discord.add_member(other, "bob", permissions=SEND_MESSAGES)
    interaction = await env.discord.invoke(
        other, channel, bob, "latest", [{"name": "topic", "value": "Private Okapi"}]
    )
    reply = await answer(interaction)
    assert reply["flags"] & EPHEMERAL and "no topic named" in reply["content"]
    assert interaction.callback_type == 4  # refused before deferring, so the refusal is private
    no_violations(env)


# ---- /search ---------------------------------------------------------------------------------------------


@module_loop
async def test_search_highlights_matches_and_filters_by_topic(server: Server) -> None:
    bot = server.env.bot
    in_topic = make_paper(
        200,
        title="Zebrafish fin regeneration atlas",
        abstract="Fin regeneration in zebrafish needs *macrophages* and_signals. @everyone should read it.",
    )
    outside = make_paper(201, title="Liver regeneration in mice", abstract="Liver regeneration is fast.")
    await store_as_polled(bot, [in_topic, outside])
    await bot.services.topics.save_custom(server.guild.id, "Zebrafish Fins", "ti:zebrafish")

    everywhere = (await answer(await server.run("search", query="regeneration")))["content"]
    assert in_topic.arxiv_id in everywhere and outside.arxiv_id in everywhere
    assert "**regeneration**" in everywhere  # the match in bold
    assert (
        "\\*macrophages\\*" in everywhere and "and\\_signals" in everywhere
    )  # the paper's own markdown escaped
    assert "@everyone" not in everywhere and f"@{ZWSP}everyone" in everywhere

    filtered = (await answer(await server.run("search", query="regeneration", topic="Zebrafish Fins")))[
        "content"
    ]
    assert in_topic.arxiv_id in filtered and outside.arxiv_id not in filtered
    assert "1 result" in filtered and "Zebrafish Fins" in filtered.splitlines()[0]
    no_violations(server.env)


@module_loop
async def test_search_confirms_fts_hits_with_the_exact_query_and_applies_since(server: Server) -> None:
    bot = server.env.bot
    old = make_paper(210, title="Quokka census methods", published=BASE_TIME - timedelta(days=40))
    new = make_paper(211, title="Quokka census with drones")
    negated = make_paper(212, title="Quokka census with drones and traps")
    await store_as_polled(bot, [old, new, negated])
    since = (BASE_TIME - timedelta(days=10)).date().isoformat()

    content = (await answer(await server.run("search", query="quokka ANDNOT traps", since=since)))["content"]
    assert new.arxiv_id in content
    assert old.arxiv_id not in content and negated.arxiv_id not in content
    assert f"since {since}" in content
    no_violations(server.env)


@module_loop
async def test_search_with_a_malformed_query_shows_where_privately(server: Server) -> None:
    interaction = await server.run("search", query="GRPO AND (reward")
    reply = await answer(interaction)
    assert interaction.callback_type == 4 and reply["flags"] & EPHEMERAL
    assert "does not parse" in reply["content"]
    pointer = reply["content"].split("```")[1].strip("\n").splitlines()
    assert pointer[0] == "GRPO AND (reward" and pointer[1].strip() == "^"
    no_violations(server.env)


@pytest.mark.parametrize("since", ["31/01/2026", "2026-02-30", "yesterday"])
@module_loop
async def test_search_with_a_bad_date_says_which_format(server: Server, since: str) -> None:
    reply = await answer(await server.run("search", query="GRPO", since=since))
    assert reply["flags"] & EPHEMERAL and "YYYY-MM-DD" in reply["content"]
    no_violations(server.env)


@module_loop
async def test_search_without_results_suggests_what_to_try(server: Server) -> None:
    reply = await answer(await server.run("search", query="xylophonically"))
    assert "No stored paper matches" in reply["content"] and "diffus*" in reply["content"]
    assert reply["components"] == []
    no_violations(server.env)


def transformer_crowd() -> list[Paper]:
    """1,200 papers where "transformer" ranks high and "attention" is always there (each hundredth about
    layers, the rest about heads), three where it ranks low and "attention" is not, and two old papers of
    January 2020 (ids 2001.*), far down a newest-first list."""
    crowded = [
        make_paper(
            20000 + i,
            title=f"Transformer attention study {i}",
            abstract="Transformer attention layers." if i % 100 == 0 else "Transformer attention heads.",
        )
        for i in range(1200)
    ]
    plain = [
        make_paper(
            22000 + i,
            title=f"Sequence models survey {i}",
            abstract="A long abstract. " * 20 + "A transformer.",
        )
        for i in range(3)
    ]
    old = [
        make_paper(
            1, arxiv_id=f"2001.0{i:04d}", title=f"Old paper {i}", published=BASE_TIME - timedelta(days=2500)
        )
        for i in range(2)
    ]
    return [*crowded, *plain, *old]


@module_loop
async def test_search_finds_matches_past_the_first_500_candidates(server: Server) -> None:
    papers = transformer_crowd()
    await store_as_polled(server.env.bot, papers)
    plain, old = papers[1200:1203], papers[1203:]

    negated = (await answer(await server.run("search", query="transformer ANDNOT attention")))["content"]
    assert "No stored paper" not in negated and "3 results" in negated
    assert all(p.arxiv_id in negated for p in plain)
    fields = (await answer(await server.run("search", query="abs:transformer ANDNOT ti:attention")))[
        "content"
    ]
    assert "3 results" in fields
    by_id = (await answer(await server.run("search", query="id:2001*")))["content"]
    assert "2 results" in by_id and all(p.arxiv_id in by_id for p in old)
    no_violations(server.env)


@module_loop
async def test_a_search_stopped_by_its_bound_says_it_is_partial_never_none(server: Server) -> None:
    history = server.env.bot.services.history
    await store_as_polled(server.env.bot, transformer_crowd())  # stored already by the test above, or now
    bounded = replace(history.limits, search_candidates=700)
    history.limits, default = bounded, history.limits
    try:
        none_yet = (await answer(await server.run("search", query="transformer ANDNOT attention")))["content"]
        some = (await answer(await server.run("search", query="transformer ANDNOT heads")))["content"]
    finally:
        history.limits = default
    assert "No stored paper matches" not in none_yet
    assert "None of the first 700 candidates" in none_yet and "Narrow the query" in none_yet
    assert "showing the 7 best of the first 700 candidates" in some and "narrow the query" in some
    whole = (await answer(await server.run("search", query="transformer ANDNOT heads")))["content"]
    assert "15 results" in whole  # within the default bound: all twelve "layers" papers and the three
    no_violations(server.env)


@pytest.mark.parametrize("count", [-1, 0, 51])
@module_loop
async def test_latest_with_a_count_outside_1_to_50_is_refused_privately(server: Server, count: int) -> None:
    bot = server.env.bot
    await store_as_polled(bot, [make_paper(130 + i, title=f"Capybara habits {i}") for i in range(3)])
    await bot.services.topics.save_custom(server.guild.id, "Capybaras", "ti:capybara")
    # Discord's range is a hint to clients: a crafted request reaches the bot with any number.
    interaction = await server.run("latest", topic="Capybaras", count=count)
    reply = await answer(interaction)
    assert interaction.callback_type == 4 and reply["flags"] & EPHEMERAL
    assert "from 1 to 50" in reply["content"]
    no_violations(server.env)


# ---- /paper ----------------------------------------------------------------------------------------------


@module_loop
async def test_paper_shows_a_stored_card_with_this_servers_topics_only(server: Server, env: Env) -> None:
    paper = make_paper(300, title="Narwhal tusk sensing", abstract="Narwhal tusks sense salinity.")
    await store_as_polled(env.bot, [paper])
    await env.bot.services.topics.save_custom(server.guild.id, "Narwhal Desk", "ti:narwhal")

    interaction = await server.run("paper", id=f"https://arxiv.org/abs/{paper.arxiv_id}v1")
    card = await answer(interaction)
    assert interaction.callback_type == 4  # stored: answered at once
    [embed] = card["embeds"]
    assert embed["title"] == "Narwhal tusk sensing" and embed["url"] == paper.abs_url
    assert "Narwhal Desk" in embed["footer"]["text"]
    assert [b.get("label") for b in buttons(card)] == [
        "Abstract",
        "PDF",
        "HTML",
        None,
        None,
        "Save",
        "Similar",
    ]

    other = env.discord.add_guild("Elsewhere")
    channel = env.discord.add_text_channel(other, "general")
    bob = env.discord.add_member(other, "bob", permissions=SEND_MESSAGES)
    elsewhere = await answer(
        await env.discord.invoke(other, channel, bob, "paper", [{"name": "id", "value": paper.arxiv_id}])
    )
    assert "Narwhal Desk" not in elsewhere["embeds"][0]["footer"]["text"]
    no_violations(env)


@module_loop
async def test_paper_not_stored_is_fetched_from_arxiv_stored_and_matched(server: Server, env: Env) -> None:
    paper = make_paper(310, title="GRPO post-training for small language models")
    env.arxiv.papers = [paper]
    use = env.bot.services
    assert await use.history.stored(paper.arxiv_id) is None
    await server.follow("RL Post-Training")
    topic = await use.topics.find(0, "RL Post-Training")
    assert topic is not None

    interaction = await server.run("paper", id=paper.arxiv_id)
    card = await answer(interaction)
    assert interaction.callback_type == 5  # deferred while arXiv answers
    assert card["embeds"][0]["url"] == paper.abs_url
    # the card names the most specific topic it matched; the parent holds it too
    footer = card["embeds"][0]["footer"]["text"]
    assert "Group Relative Policy Optimization" in footer and "RL Post-Training" not in footer
    assert await use.history.stored(paper.arxiv_id) == paper
    assert paper in await use.history.latest(topic, 50)
    # Looked up by hand, not announced: the channel following its topic gets no post for it.
    assert (await use.status.of_server(server.guild.id)).deliveries == {}
    no_violations(env)


@module_loop
async def test_paper_with_an_invalid_id_gives_an_example(server: Server) -> None:
    reply = await answer(await server.run("paper", id="not an id @everyone"))
    assert reply["flags"] & EPHEMERAL
    assert "is not an arXiv id" in reply["content"] and "2401.12345" in reply["content"]
    assert "@everyone" not in reply["content"]
    no_violations(server.env)


@module_loop
async def test_paper_missing_on_arxiv_says_so(server: Server, env: Env) -> None:
    env.arxiv.papers = []
    interaction = await server.run("paper", id="2611.99999")
    [reply] = await interaction.wait_followups(1)
    # the public "thinking" message is removed, and the error goes to the asker alone
    assert reply["flags"] & EPHEMERAL and interaction.original is None
    assert "arXiv has no paper 2611.99999" in reply["content"]
    no_violations(env)


# ---- hostile titles --------------------------------------------------------------------------------------


@module_loop
async def test_titles_with_mentions_and_markdown_render_inert_everywhere(server: Server) -> None:
    bot = server.env.bot
    hostile = make_paper(
        400,
        title="@everyone **Wombat** _burrows_ <@123456789012345678> [click](https://evil.example)",
        abstract="Wombat burrows @here are ~~square~~ ||spoiler||.",
    )
    await store_as_polled(bot, [hostile])
    await bot.services.topics.save_custom(server.guild.id, "Wombat @everyone **Desk**", "ti:wombat")

    texts = [
        (await answer(await server.run("latest", topic="Wombat @everyone **Desk**")))["content"],
        (await answer(await server.run("search", query="wombat")))["content"],
    ]
    card = await answer(await server.run("paper", id=hostile.arxiv_id))
    texts += [card["embeds"][0]["title"], card["embeds"][0]["description"]]
    for text in texts:
        assert "@everyone" not in text and "@here" not in text and "<@1" not in text
    for text in texts[:2]:
        assert "\\*\\*Wombat\\*\\*" in text and "\\_burrows\\_" in text and "\\[click\\]" in text
    assert "\\*\\*Desk\\*\\*" in texts[0]
    no_violations(server.env)


@module_loop
async def test_topic_autocomplete_offers_at_most_25(server: Server) -> None:
    choices = await server.env.discord.autocomplete(
        server.guild, server.channel, server.alice, "latest", [{"name": "topic", "value": ""}]
    )
    assert len(choices) == 25
    typed = await server.env.discord.autocomplete(
        server.guild,
        server.channel,
        server.alice,
        "search",
        [{"name": "query", "value": "x"}, {"name": "topic", "value": "post-train", "focused": True}],
    )
    assert "RL Post-Training" in [c["name"] for c in typed]
    no_violations(server.env)


# ---- pieces: highlight, dates, pages ---------------------------------------------------------------------


def test_highlight_escapes_the_text_then_bolds_the_matches() -> None:
    snippet = (
        f"the *old* {HIGHLIGHT_START}reward{HIGHLIGHT_END} {HIGHLIGHT_START}model{HIGHLIGHT_END} for @here"
    )
    assert highlight(snippet) == f"the \\*old\\* **reward model** for @{ZWSP}here"


def test_highlight_cut_inside_a_match_leaves_no_open_bold() -> None:
    snippet = "word " * 20 + f"{HIGHLIGHT_START}{'x' * 200}{HIGHLIGHT_END}"
    text = highlight(snippet, limit=60)
    assert len(text) <= 60 and "**" not in text and text.endswith("…")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(max_size=30), st.sampled_from(["*", "_", "`", "\\", "@everyone", "<@1>", "|"])),
        max_size=20,
    ),
    st.lists(st.booleans(), min_size=20, max_size=20),
)
def test_highlight_is_bounded_balanced_and_inert(parts: list[str], marked: list[bool]) -> None:
    snippet = " ".join(
        f"{HIGHLIGHT_START}{p}{HIGHLIGHT_END}" if mark else p for p, mark in zip(parts, marked, strict=False)
    )
    text = highlight(snippet, limit=200)
    assert len(text) <= 200
    assert "@everyone" not in text and "<@1" not in text
    assert HIGHLIGHT_START not in text and HIGHLIGHT_END not in text
    assert bold_markers(text) % 2 == 0


def bold_markers(text: str) -> int:
    """How many "**" markdown sees: a backslash escapes the next character."""
    count, i = 0, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text.startswith("**", i):
            count, i = count + 1, i + 2
        else:
            i += 1
    return count


def test_since_is_midnight_utc_of_that_day() -> None:
    moment = parse_since(" 2026-01-31 ")
    assert moment is not None and moment.isoformat() == "2026-01-31T00:00:00+00:00"
    assert parse_since(None) is None


@settings(max_examples=40, deadline=None)
@given(
    st.text(max_size=60),
    st.lists(st.text(min_size=1, max_size=400), max_size=30),
    st.integers(min_value=1, max_value=6),
)
def test_pack_lines_keeps_every_entry_in_order_within_limits(
    header: str, entries: list[str], per_page: int
) -> None:
    header, entries = header.replace("\n", " "), [e.replace("\n", " ") for e in entries]
    pages = pack_lines(header, entries, per_page=per_page, limit=1000)
    assert all(len(page) <= 1000 for page in pages)
    if not entries:
        assert pages == [header]
        return
    bodies = [page.split("\n")[1:] if header else page.split("\n") for page in pages]
    assert all(1 <= len(body) <= per_page for body in bodies)
    assert [line for body in bodies for line in body] == entries  # each under 1000: none was clipped


@dataclass
class FakeResponse:
    sent: list[tuple[str, bool]] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)

    async def send_message(self, content: str, *, ephemeral: bool = False) -> None:
        self.sent.append((content, ephemeral))

    async def edit_message(self, **kwargs: Any) -> None:
        self.edits.append(kwargs)


@dataclass
class FakeComponentInteraction:
    """Just what the paginator touches of a button click (the fake Discord cannot send clicks)."""

    user_id: int
    response: FakeResponse = field(default_factory=FakeResponse)
    original_edits: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def user(self) -> discord.Object:
        return discord.Object(self.user_id)

    async def edit_original_response(self, **kwargs: Any) -> None:
        self.original_edits.append(kwargs)


def three_pages() -> list[Page]:
    return [Page(content=f"page {i}") for i in range(1, 4)]


@module_loop
async def test_paginator_turns_pages_and_clamps_at_the_ends() -> None:
    view = Paginator(three_pages(), author_id=7)
    assert view.current.content == "page 1"
    assert (view.previous_page.disabled, view.next_page.disabled, view.counter.label) == (True, False, "1/3")
    assert view.turn(1).content == "page 2"
    assert (view.previous_page.disabled, view.next_page.disabled, view.counter.label) == (False, False, "2/3")
    assert view.turn(5).content == "page 3" and view.next_page.disabled
    assert view.turn(-9).content == "page 1" and view.previous_page.disabled


@module_loop
async def test_only_the_author_can_turn_pages() -> None:
    view = Paginator(three_pages(), author_id=7)
    stranger = FakeComponentInteraction(user_id=8)
    assert await view.interaction_check(stranger) is False  # type: ignore[arg-type]
    assert stranger.response.sent == [(NOT_YOURS, True)]
    author = FakeComponentInteraction(user_id=7)
    assert await view.interaction_check(author) is True  # type: ignore[arg-type]
    assert author.response.sent == []


@module_loop
async def test_a_click_edits_the_message_to_the_next_page_and_timeout_greys_the_buttons() -> None:
    view = Paginator(three_pages(), author_id=7)
    click = FakeComponentInteraction(user_id=7)
    await view.next_page.callback(click)  # type: ignore[arg-type]
    [edit] = click.response.edits
    assert edit["content"] == "page 2" and edit["embeds"] == [] and edit["view"] is view
    assert view.counter.label == "2/3"

    await view.on_timeout()
    assert all(item.disabled for item in view.children if isinstance(item, discord.ui.Button))
    assert click.original_edits == [{"view": view}]  # through the latest click's token, still valid

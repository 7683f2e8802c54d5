"""bot.render: the paper card reads well and can never break a Discord limit or ping anyone."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime

import discord
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from bot.delivery import more_papers_text
from bot.models import Author, Paper
from bot.render import (
    DEFAULT_ABSTRACT_CHARS,
    DIGEST_EMBEDS_CHARS,
    digest_content,
    digest_embeds,
    digest_thread_name,
    embed_size,
    format_affiliations,
    format_authors,
    inert_fit,
    inert_markdown,
    neutralise_mentions,
    paper_compact_line,
    paper_console,
    paper_embed,
    paper_view,
    safe_name,
    thread_name,
    trim_at_sentence,
)
from bot.store import PendingDelivery
from bot.store.search import HIGHLIGHT_END, HIGHLIGHT_START
from cogs.history import highlight
from cogs.pagination import inline_text
from tests.factories import make_paper
from tests.markdown_links import live_links
from tests.shared_files import FIXTURES

LIVE_MENTION = re.compile(r"@everyone|@here|<@!?\d+>|<@&\d+>|<#\d+>")

SENTENCE = "Reward models guide post-training of large language models. "


def _authors(*names: str) -> tuple[Author, ...]:
    return tuple(Author(name) for name in names)


def _embed_texts(embed: discord.Embed) -> list[str]:
    texts = [embed.title, embed.description, embed.footer.text, embed.author.name]
    texts += [t for f in embed.fields for t in (f.name, f.value)]
    return [t for t in texts if t]


# ---------------------------------------------------------------------------------------------------------
# Example cards


def test_card_of_a_realistic_paper() -> None:
    paper = make_paper(
        arxiv_id="2611.01234",
        version=3,
        title=r"GD $^2$ PO:  Group Decoupled\n Policy Optimisation with $\alpha$-divergence",
        abstract=r"We cut compute by $4\times$ and gain {\sim}15% on MATH. " * 2,
        authors=(
            Author("Ada Lovelace", ("Tsinghua University",)),
            Author("Alan Turing", ("Tencent", "tsinghua university")),
            Author("Grace Hopper"),
            Author("Edsger Dijkstra", ("Tencent",)),
            Author("Barbara Liskov"),
        ),
        primary_category="cs.LG",
        categories=("cs.LG", "cs.AI", "stat.ML"),
        published=datetime(2026, 11, 20, 9, 30, tzinfo=UTC),
        updated=datetime(2026, 11, 24, 8, 0, tzinfo=UTC),
        comment="Accepted at ICLR 2026 · 12 pages",
        doi="10.1234/abc_def",
    )
    embed = paper_embed(paper, topics=["RL Post-Training", "Reward Modeling"])

    assert embed.title == r"GD² PO: Group Decoupled\n Policy Optimisation with α-divergence"
    assert embed.url == "https://arxiv.org/abs/2611.01234"
    assert embed.author.name == "Ada Lovelace, Alan Turing, Grace Hopper +2"
    header, abstract = embed.description.split("\n\n")
    affiliations, meta = header.split("\n")
    assert affiliations == "*Tsinghua University · Tencent*"
    assert meta == "2026-11-20 · **cs.LG** (+cs.AI, stat.ML) · v3, updated 2026-11-24"
    assert abstract.startswith("We cut compute by 4× and gain \\~15% on MATH.")
    assert [(f.name, f.value, f.inline) for f in embed.fields] == [
        ("Comment", "Accepted at ICLR 2026 · 12 pages", True),
        ("DOI", "[10.1234/abc\\_def](https://doi.org/10.1234/abc_def)", True),
    ]
    assert embed.footer.text == "Matched: RL Post-Training · Reward Modeling • arXiv:2611.01234v3"
    assert embed.timestamp == paper.published
    assert embed.colour == paper_embed(make_paper(primary_category="cs.CV")).colour
    assert embed_size(embed) == len(embed)


def test_number_of_authors_shown_is_configurable() -> None:
    paper = make_paper(authors=_authors("A", "B", "C", "D", "E"))
    assert paper_embed(paper, authors_shown=1).author.name == "A +4"
    assert paper_embed(paper, authors_shown=5).author.name == "A, B, C, D, E"


def test_first_version_shows_no_version_and_no_optional_parts() -> None:
    paper = make_paper(authors=_authors("Solo Author"), categories=("cs.LG",), comment=None, doi=None)
    embed = paper_embed(paper)
    assert embed.author.name == "Solo Author"
    assert embed.description.split("\n")[0] == "2026-11-16 · **cs.LG**"
    assert embed.fields == []
    assert embed.footer.text == "arXiv:2611.10001v1"


def test_second_version_on_the_same_day_says_v2_only() -> None:
    paper = make_paper(version=2)
    assert paper_embed(paper).description.split("\n")[1].endswith("· v2")


def test_journal_ref_gets_its_own_field_and_long_comment_is_not_inline() -> None:
    comment = "Long comment " * 10
    paper = make_paper(comment=comment, journal_ref="Phys. Rev. D 1, 2 (2026)")
    fields = {f.name: f for f in paper_embed(paper).fields}
    assert fields["Comment"].value == comment.strip() and not fields["Comment"].inline
    assert fields["Journal"].value == "Phys. Rev. D 1, 2 (2026)" and fields["Journal"].inline


def test_doi_with_unsafe_characters_is_percent_encoded_in_its_link() -> None:
    paper = make_paper(doi="10.1002/(SICI)1097<12>")
    (field,) = paper_embed(paper).fields
    assert field.value == "[10.1002/(SICI)1097\\<12\\>](https://doi.org/10.1002/%28SICI%291097%3C12%3E)"


def test_abstract_is_trimmed_at_a_sentence_near_the_limit() -> None:
    paper = make_paper(abstract=SENTENCE * 30)
    abstract = paper_embed(paper).description.split("\n\n", 1)[1]
    assert abstract.endswith("language models. …")
    assert DEFAULT_ABSTRACT_CHARS * 0.6 <= len(abstract) <= DEFAULT_ABSTRACT_CHARS
    short = paper_embed(paper, abstract_chars=200).description.split("\n\n", 1)[1]
    assert len(short) <= 200 and short.endswith(". …")


def test_short_abstract_is_whole_and_has_no_ellipsis() -> None:
    paper = make_paper(abstract=SENTENCE)
    assert paper_embed(paper).description.endswith("\n\n" + SENTENCE.strip())


def test_markdown_in_the_abstract_is_escaped() -> None:
    # {\sim} becomes "~" only after LaTeX conversion: escaping must happen after it.
    paper = make_paper(
        abstract=r"We use *stars*, _under_, {\sim}{\sim}strike{\sim}{\sim}, `code`, ||spoiler|| and $a|b$."
    )
    abstract = paper_embed(paper).description.split("\n\n", 1)[1]
    assert abstract == r"We use \*stars\*, \_under\_, \~\~strike\~\~, \`code\`, \|\|spoiler\|\| and a\|b."


def test_a_quote_marker_at_the_start_of_the_abstract_is_escaped() -> None:
    abstract = paper_embed(make_paper(abstract="> 90% accuracy.")).description.split("\n\n", 1)[1]
    assert abstract == "\\> 90% accuracy."


def test_nothing_in_the_card_can_ping() -> None:
    hostile = "@everyone @here <@123> <@!45> <@&678> <#910>"
    paper = make_paper(
        title=hostile,
        abstract=hostile,
        authors=(Author(hostile, (hostile,)),),
        comment=hostile,
        journal_ref=hostile,
        primary_category="@everyone",
    )
    embed = paper_embed(paper, topics=[hostile])
    texts = [*_embed_texts(embed), paper_compact_line(paper), thread_name(paper), paper_console(paper)]
    assert all(LIVE_MENTION.search(text) is None for text in texts)
    assert embed.title == neutralise_mentions(hostile)


def test_latex_can_not_assemble_a_mention() -> None:
    paper = make_paper(title=r"@every{}one and <@{}123>")
    assert LIVE_MENTION.search(paper_embed(paper).title) is None


def test_colours_are_stable_per_archive_and_differ_between_archives() -> None:
    def colour(category: str) -> discord.Colour:
        return paper_embed(make_paper(primary_category=category)).colour

    assert colour("cs.LG") == colour("cs.AI")
    assert colour("hep-th") == colour("hep-ph")
    assert len({colour(c).value for c in ("cs.LG", "stat.ML", "math.OC", "quant-ph", "q-bio.NC")}) == 5
    assert colour("brand-new.XX") == colour("brand-new.YY")  # unknown archives: stable fallback


def test_many_categories_are_summarised() -> None:
    paper = make_paper(categories=("cs.LG", "cs.AI", "cs.CL", "stat.ML", "math.OC", "cs.CV"))
    meta = paper_embed(paper).description.split("\n")[1]  # under the affiliations line
    assert meta == "2026-11-16 · **cs.LG** (+cs.AI, cs.CL, stat.ML +2)"


def test_old_style_ids_get_working_links() -> None:
    paper = make_paper(arxiv_id="hep-ph/9411242")
    assert paper_embed(paper).url == "https://arxiv.org/abs/hep-ph/9411242"
    assert [b.url for b in paper_view(paper).children if b.url] == [
        "https://arxiv.org/abs/hep-ph/9411242",
        "https://arxiv.org/pdf/hep-ph/9411242",
        "https://arxiv.org/html/hep-ph/9411242",
    ]


def test_card_of_a_real_fixture_entry() -> None:
    feed = etree.parse(str(FIXTURES / "api_query_legacy_10.xml"))
    ns = {"a": "http://www.w3.org/2005/Atom", "x": "http://arxiv.org/schemas/atom"}
    entry = next(e for e in feed.findall("a:entry", ns) if "hep-ph/9411242" in e.findtext("a:id", "", ns))
    paper = make_paper(
        arxiv_id="hep-ph/9411242",
        title=entry.findtext("a:title", "", ns),
        abstract=entry.findtext("a:summary", "", ns),
        authors=tuple(
            Author(a.findtext("a:name", "", ns), tuple(x.text for x in a.findall("x:affiliation", ns)))
            for a in entry.findall("a:author", ns)
        ),
        primary_category="hep-ph",
        categories=("hep-ph",),
        comment=entry.findtext("x:comment", None, ns),
    )
    embed = paper_embed(paper)
    assert embed.title == (
        "Proton-ring and Electron-linac Collider (PRELC) as a (first) "
        "TeV-rangeelectron-proton or photon-proton collider"
    )
    assert embed.description.startswith("*SEFT, Univ. Helsinki*\n")
    assert "range of 10³¹ to 10³² could be achieved" in embed.description
    assert "e⁺e⁻-collider" in embed.description
    assert [(f.name, f.value) for f in embed.fields] == [("Comment", "4 pages, revtex")]


# ---------------------------------------------------------------------------------------------------------
# Pieces


def test_format_authors() -> None:
    assert format_authors(()) == ""
    assert format_authors(_authors("A", "B")) == "A, B"
    assert format_authors(_authors("A", "B", "C", "D", "E")) == "A, B, C +2"
    assert format_authors(_authors("A", "B", "C", "D"), shown=1) == "A +3"
    assert format_authors(_authors("  Jane \n Doe ", "", "B")) == "Jane Doe, B"


def test_format_authors_drops_names_before_overflowing() -> None:
    names = _authors("x" * 120, "y" * 120, "z" * 120)
    assert format_authors(names) == "x" * 120 + ", " + "y" * 120 + " +1"
    long = format_authors(_authors("w" * 400, "v"))
    assert len(long) == 256 and long.endswith("… +1")


def test_format_affiliations() -> None:
    authors = (
        Author("A", ("MIT", "Google DeepMind")),
        Author("B", ("mit",)),
        Author("C", ("ETH Zürich",)),
        Author("D", ("Mila", "  ")),
    )
    assert format_affiliations(authors) == "MIT · Google DeepMind · ETH Zürich +1"
    assert format_affiliations(authors, limit=5) == "MIT · Google DeepMind · ETH Zürich · Mila"
    assert format_affiliations(_authors("A", "B")) is None
    long = format_affiliations((Author("A", ("Department " * 20,)),))
    assert long is not None and len(long) <= 60 and long.endswith("…")


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("Short one.", 50, "Short one."),
        ("First sentence here. Second sentence is longer.", 30, "First sentence here. …"),
        (
            "We follow Smith et al. Their method works. And more text follows here.",
            50,
            "We follow Smith et al. Their method works. …",
        ),
        ("See Fig. 3 for the whole picture of everything we did", 30, "See Fig. 3 for the whole…"),
        ("nowordbreaksanywhereinthistextatall", 10, "nowordbre…"),
        ("anything", 1, "…"),
        ("anything", 0, ""),
    ],
)
def test_trim_at_sentence(text: str, limit: int, expected: str) -> None:
    assert trim_at_sentence(text, limit) == expected


def test_neutralise_mentions_keeps_the_text_readable() -> None:
    assert neutralise_mentions("hi @everyone and <@&12>") == "hi @\u200beveryone and <@&\u200b12>"
    assert (
        neutralise_mentions("mail me@example.org, see <https://x.y>")
        == "mail me@example.org, see <https://x.y>"
    )
    assert neutralise_mentions(neutralise_mentions("@here")) == "@\u200bhere"


def test_compact_line() -> None:
    paper = make_paper(
        arxiv_id="2611.01234",
        title="Scaling *Reward* Models [fast]",
        authors=_authors("A", "B", "C", "D", "E"),
        published=datetime(2026, 11, 20, tzinfo=UTC),
    )
    assert paper_compact_line(paper) == (
        r"[Scaling \*Reward\* Models \[fast\]](<https://arxiv.org/abs/2611.01234>) — A, B +3 · cs.LG · 2026-11-20"
    )


def test_compact_line_trims_a_long_title_but_keeps_the_link() -> None:
    line = paper_compact_line(make_paper(title="word " * 200))
    assert len(line) <= 300
    assert "…](<https://arxiv.org/abs/2611.10001>) — Ada Lovelace, Alan Turing · cs.LG · 2026-11-16" in line


def test_thread_name() -> None:
    assert thread_name(make_paper(title="A $\\beta$ title")) == "A β title"
    long = thread_name(make_paper(title="token " * 50))
    assert len(long) <= 100 and long.endswith("…")
    assert thread_name(make_paper(title="  $$ ")) == "arXiv:2611.10001"


def test_console_card_wraps_to_width_and_shows_everything() -> None:
    paper = make_paper(abstract=SENTENCE * 4, comment="9 pages", doi="10.1/x")
    text = paper_console(paper, topics=["RL"], width=60)
    lines = text.split("\n")
    assert all(len(line) <= 60 for line in lines)
    assert lines[1] == "Paper number 1 on reinforcement learning"
    assert "Ada Lovelace, Alan Turing" in lines
    assert "University of London" in lines
    assert "2026-11-16 · cs.LG (+cs.AI) · arXiv:2611.10001v1" in lines
    assert {"Comment: 9 pages", "DOI: 10.1/x", "Matched: RL", "https://arxiv.org/abs/2611.10001"} <= set(
        lines
    )


async def test_view_has_three_link_buttons_then_the_card_actions_inside_a_running_loop() -> None:
    view = paper_view(make_paper())
    assert view.timeout is None
    links, actions = (row["components"] for row in view.to_components())
    assert [(b["label"], b["url"], b["style"]) for b in links] == [
        ("Abstract", "https://arxiv.org/abs/2611.10001", discord.ButtonStyle.link.value),
        ("PDF", "https://arxiv.org/pdf/2611.10001", discord.ButtonStyle.link.value),
        ("HTML", "https://arxiv.org/html/2611.10001", discord.ButtonStyle.link.value),
    ]
    assert [b["custom_id"] for b in actions] == [
        "pw:up:0:2611.10001",
        "pw:down:0:2611.10001",
        "pw:save:0:2611.10001",
        "pw:similar:0:2611.10001",
    ]
    assert [b.get("label") for b in actions] == [None, None, "Save", "Similar"]


def test_view_also_builds_without_an_event_loop() -> None:
    assert len(paper_view(make_paper()).children) == 7
    assert len(paper_view(make_paper(), actions=False).children) == 3


def test_invalid_ids_give_no_links_rather_than_bad_urls() -> None:
    paper = make_paper(arxiv_id="not an id @everyone")
    assert paper_embed(paper).url is None
    assert paper_view(paper).children == []
    assert paper_compact_line(paper).startswith("Paper number 1")


# ---------------------------------------------------------------------------------------------------------
# Properties over arbitrary papers

_HOSTILE = st.sampled_from(
    [
        "@everyone",
        "@here",
        "<@123>",
        "<@!9>",
        "<@&77>",
        "<#5>",
        "$",
        "\\",
        "%",
        "*",
        "_",
        "`",
        "|",
        ">",
        "~",
        "\n",
        "@",
        "<@",
        "&",
        "{",
        "}",
        "^",
        "[",
        "]",
        "(",
        ")",
        "\u200b",
        "\x00",
        "𝒪",
        "\\mathcal{O}",
        "$x^2$",
        "[1]",
        "[github.com/lab/repo](https://evil.example/phish)",
        "[x](<https://evil.example/a>)",
        "](",
        "https://evil.example/b",
        "<https://evil.example/c>",
        "HTTP://evil.example/d",
        "://",
        "\\[",
        "- ",
        "1. ",
        "# ",
        "-# ",
        "<t:0>",
        "</cmd:1>",
    ]
)
_TEXT = st.lists(st.one_of(_HOSTILE, st.text(max_size=40)), max_size=30).map("".join)
_LONG_TEXT = st.one_of(_TEXT, st.text(min_size=2000, max_size=8000), _TEXT.map(lambda t: t * 50))
_NAME = st.one_of(st.text(max_size=80), _HOSTILE)
_AUTHOR = st.builds(Author, _NAME, st.lists(_NAME, max_size=3).map(tuple))
_MANY_AUTHORS = st.lists(
    st.builds(Author, st.sampled_from(["A. B", "Ada", "@everyone", "x" * 300])), min_size=300, max_size=500
)
_ARXIV_ID = st.one_of(
    st.from_regex(r"\d{4}\.\d{4,5}", fullmatch=True),
    st.from_regex(r"[a-z][a-z\-]{1,10}(\.[A-Z]{2})?/\d{7}", fullmatch=True),
)
_MOMENT = st.datetimes(min_value=datetime(1991, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))

papers = st.builds(
    Paper,
    arxiv_id=_ARXIV_ID,
    version=st.integers(1, 99),
    title=st.one_of(_TEXT, st.text(max_size=1000)),
    abstract=_LONG_TEXT,
    authors=st.one_of(st.lists(_AUTHOR, max_size=12), _MANY_AUTHORS).map(tuple),
    primary_category=st.one_of(st.sampled_from(["cs.LG", "stat.ML", "hep-th", "q-bio.NC"]), _NAME),
    categories=st.lists(_NAME, max_size=50).map(tuple),
    published=_MOMENT,
    updated=_MOMENT,
    comment=st.none() | _LONG_TEXT,
    journal_ref=st.none() | _LONG_TEXT,
    doi=st.none() | _TEXT,
)
topic_lists = st.lists(st.one_of(_NAME, st.text(min_size=100, max_size=3000)), max_size=30)

_SETTINGS = settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _assert_within_limits(embed: discord.Embed) -> None:
    assert embed.title and len(embed.title) <= 256
    assert embed.description is None or 0 < len(embed.description) <= 4096
    assert len(embed.fields) <= 25
    for field in embed.fields:
        assert 0 < len(field.name) <= 256 and 0 < len(field.value) <= 1024
    assert embed.footer.text is None or 0 < len(embed.footer.text) <= 2048
    assert embed.author.name is None or 0 < len(embed.author.name) <= 256
    assert embed_size(embed) == len(embed) <= 6000
    assert embed.url is None or len(embed.url) <= 512
    json.dumps(embed.to_dict())  # serialisable as sent


@_SETTINGS
@given(paper=papers, topics=topic_lists, abstract_chars=st.integers(-5, 10_000))
def test_every_card_respects_discord_limits_and_never_pings(
    paper: Paper, topics: list[str], abstract_chars: int
) -> None:
    embed = paper_embed(paper, topics=topics, abstract_chars=abstract_chars)
    _assert_within_limits(embed)
    for text in _embed_texts(embed):
        assert LIVE_MENTION.search(text) is None, text


@_SETTINGS
@given(paper=papers)
def test_every_line_name_and_view_is_safe(paper: Paper) -> None:
    line = paper_compact_line(paper)
    assert 0 < len(line) <= 300 and "\n" not in line and LIVE_MENTION.search(line) is None
    name = thread_name(paper)
    assert 0 < len(name) <= 100 and name.strip() and "\n" not in name and LIVE_MENTION.search(name) is None
    view = paper_view(paper)
    assert len(view.children) <= 25 and len(view.to_components()) <= 5
    for button in view.children:
        assert isinstance(button, discord.ui.Button)
        assert button.label or button.emoji
        assert len(button.label or "") <= 80
        assert (button.url and len(button.url) <= 512) or len(button.custom_id or "") <= 100
    console = paper_console(paper, topics=["t"], width=72)
    assert all(len(row) <= 72 for row in console.split("\n"))
    assert LIVE_MENTION.search(console) is None


@settings(max_examples=100, deadline=None)
@given(text=_TEXT, limit=st.integers(0, 500))
def test_trim_at_sentence_never_exceeds_the_limit(text: str, limit: int) -> None:
    out = trim_at_sentence(text, limit)
    assert len(out) <= limit
    if len(text.strip()) <= limit:
        assert out == text.strip()
    elif limit > 0:
        assert out.endswith("…")


@settings(max_examples=100, deadline=None)
@given(text=_TEXT)
def test_neutralised_text_has_no_live_mention(text: str) -> None:
    assert LIVE_MENTION.search(neutralise_mentions(text)) is None


# ---------------------------------------------------------------------------------------------------------
# Links: only the bot's own. Text from a paper (or a user) can form none, wherever it becomes markdown.


def own_links(paper: Paper) -> set[str]:
    """The bot's own links: the paper's abstract page and its DOI's page."""
    embed = paper_embed(paper)
    doi = [t for f in embed.fields if f.name == "DOI" for t in live_links(f.value)]
    return {paper.abs_url, *doi}


def test_live_links_sees_what_discord_links() -> None:
    assert live_links("[a](https://x.y) and https://z.w/p") == ["https://x.y", "https://z.w/p"]
    assert live_links(r"\[a](https://x.y) \\[b](<https://v.w>)") == ["https://x.y", "https://v.w"]
    assert live_links(r"\[a\](https\://x.y) https\://z.w") == []


def test_a_masked_link_after_a_bracket_in_the_abstract_stays_text() -> None:
    # discord.utils.escape_markdown escapes only the first "[" of a line: the second link stayed live.
    forged = "We cite [1] and release code at [github.com/lab/repo](https://evil.example/phish)."
    paper = make_paper(abstract=forged, comment=forged, authors=(Author("A", (forged,)),))
    embed = paper_embed(paper)
    for text in [embed.description or "", *(f.value for f in embed.fields)]:
        assert live_links(text) == []
    assert embed.description.endswith(
        r"We cite \[1\] and release code at \[github.com/lab/repo\](https\://evil.example/phish)."
    )


def test_inert_markdown_keeps_the_text_and_breaks_every_form() -> None:
    assert (
        inert_markdown("a_b *c* `d` ~~e~~ ||f|| <g> #h") == r"a\_b \*c\* \`d\` \~\~e\~\~ \|\|f\|\| \<g\> \#h"
    )
    assert inert_markdown("see https://x.org/a_b") == r"see https\://x.org/a\_b"
    assert inert_markdown("- item") == r"\- item"
    assert inert_markdown("12. item") == r"12\. item"
    assert inert_markdown("1.5 times, a-b") == "1.5 times, a-b"  # no list, nothing to escape
    assert inert_markdown("C:\\temp") == "C:\\\\temp"
    assert inert_markdown("@everyone") == "@\u200beveryone"


_SETTINGS_LINKS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS_LINKS
@given(paper=papers, topics=topic_lists, text=_TEXT)
def test_no_paper_or_user_text_forms_a_link_anywhere(paper: Paper, topics: list[str], text: str) -> None:
    own = own_links(paper)
    embed = paper_embed(paper, topics=topics)
    digest = digest_embeds([(paper, topics)] * 3)
    pending = PendingDelivery(1, 1, 1, "each", "pending", 0, paper, (text, *topics))
    snippet = f"{text} {HIGHLIGHT_START}{paper.abstract[:100]}{HIGHLIGHT_END} {paper.title[:100]}"
    markdown = [
        embed.description or "",
        *(f.value for f in embed.fields),
        *(e.description or "" for e in digest),
        *(f.value for e in digest for f in e.fields),
        digest_content([(paper, [text, *topics])]),
        paper_compact_line(paper),
        highlight(snippet),
        more_papers_text([pending]),
        inline_text(text, 100),
        safe_name(text),
        inert_fit(text, 100),
    ]
    for shown in markdown:
        assert set(live_links(shown)) <= own, shown


@_SETTINGS_LINKS
@given(text=_TEXT, limit=st.integers(min_value=0, max_value=300))
def test_inert_fit_shows_as_much_as_fits_and_never_more(text: str, limit: int) -> None:
    # The one "escape, then shrink" loop: whatever escaping adds, the result fits, and text that fits whole
    # is shown whole.
    shown = inert_fit(text, limit)
    assert len(shown) <= limit
    whole = inert_markdown(text)
    if len(whole) <= limit:
        assert shown == whole
    assert live_links(shown) == []


# ---------------------------------------------------------------------------------------------------------
# Hostile entries cost what an ordinary card costs (counted, not timed: the timings are in bench/)


def _calls(render: Callable[[], object]) -> int:
    """Function calls, Python and built-in, made by `render`: a count of work that cannot be a clock."""
    calls = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(profile)
    try:
        render()
    finally:
        sys.setprofile(None)
    return calls


def _render_everything(paper: Paper) -> None:
    paper_embed(paper, topics=["RL Post-Training"])
    paper_compact_line(paper)
    thread_name(paper)
    paper_console(paper)
    digest_embeds([(paper, ["RL Post-Training"])] * 10)


_ORDINARY = make_paper(
    title=r"GD $^2$ PO: Group Decoupled Policy Optimisation with $\alpha$-divergence",
    abstract=(
        r"We cut compute by $4\times$ and gain {\sim}15% on MATH with $\mathcal{O}(n^2)$ memory. " * 22
    )[:1920],
    authors=tuple(Author(f"Author {i}", (f"University {i % 4}",)) for i in range(12)),
    comment="Accepted at ICLR 2026. 32 pages, 11 figures; code at https://github.com/lab/gd2po",
    journal_ref="Proc. ICLR 2026",
    doi="10.1234/abc_def",
)
_HUGE = r"\frac{x_\mathrm{" + "_\\mathrm{a} $x^{" * 70_000


@functools.cache
def _ordinary_calls() -> int:
    return _calls(lambda: _render_everything(_ORDINARY))


@pytest.mark.parametrize(
    "hostile",
    [
        dataclasses.replace(_ORDINARY, authors=(Author("\\alpha " + "a" * 50_000), *_ORDINARY.authors)),
        dataclasses.replace(_ORDINARY, authors=(Author("A. Author", ("Lab",)),) * 1_000_000),
        dataclasses.replace(_ORDINARY, authors=tuple(Author(f"A {i}", (f"Lab {i}",)) for i in range(20_000))),
        dataclasses.replace(_ORDINARY, authors=(Author("A", ("Dept " + _HUGE,)),)),
        dataclasses.replace(_ORDINARY, title=_HUGE, abstract=_HUGE * 10, comment=_HUGE, journal_ref=_HUGE),
        dataclasses.replace(_ORDINARY, doi=_HUGE, primary_category=_HUGE, categories=(_HUGE,) * 100_000),
        dataclasses.replace(_ORDINARY, title=r"\frac{" * 30, abstract=r"\sqrt[" * 30, comment=r"\href{" * 30),
    ],
    ids=["50k-name", "1M-authors", "20k-affiliations", "1M-affiliation", "1M-texts", "1M-ids", "exponential"],
)
def test_a_hostile_entry_renders_for_the_cost_of_an_ordinary_card(hostile: Paper) -> None:
    assert _calls(lambda: _render_everything(hostile)) <= 2 * _ordinary_calls()
    embed = paper_embed(hostile)
    _assert_within_limits(embed)


# ---------------------------------------------------------------------------------------------------------
# Digests: ten cards in one message, within the 6,000 characters they share


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(ten=st.lists(papers, min_size=1, max_size=10), topics=topic_lists)
def test_a_digest_always_fits_one_message(ten: list[Paper], topics: list[str]) -> None:
    items = [(paper, topics[i:]) for i, paper in enumerate(ten)]
    embeds = digest_embeds(items)
    assert len(embeds) == len(items)
    for embed in embeds:
        _assert_within_limits(embed)
    assert sum(embed_size(e) for e in embeds) <= DIGEST_EMBEDS_CHARS
    content = digest_content(items)
    assert 0 < len(content) <= 2000 and LIVE_MENTION.search(content) is None
    name = digest_thread_name(items)
    assert 0 < len(name) <= 100 and LIVE_MENTION.search(name) is None


@_SETTINGS
@given(paper=papers, budget=st.integers(1, 6000))
def test_a_card_fits_any_budget(paper: Paper, budget: int) -> None:
    embed = paper_embed(paper, topics=["RL Post-Training"], budget=budget)
    assert embed_size(embed) <= budget and embed.title


def test_a_small_budget_takes_the_notes_then_the_affiliations_then_the_abstract() -> None:
    full = paper_embed(_ORDINARY, abstract_chars=280)
    seen = set()
    for budget in range(200, 1000, 15):
        embed = paper_embed(_ORDINARY, abstract_chars=280, budget=budget)
        assert embed_size(embed) <= budget
        affiliations = embed.description.startswith("*University 0")
        abstract = len(embed.description.split("\n\n")[1]) if "\n\n" in embed.description else 0
        if embed.fields:
            assert affiliations
        if affiliations:  # what a card keeps of its abstract (250, cut at a sentence) before they go
            assert abstract >= 0.6 * 250
        seen.add((len(embed.fields), affiliations, abstract >= 0.6 * 250))
        assert (embed.title, embed.author.name) == (full.title, full.author.name)  # never squeezed here
    assert {(3, True, True), (0, True, True), (0, False, True), (0, False, False)} <= seen, seen

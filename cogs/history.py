"""/latest, /search and /paper: answers from the stored history (and arXiv, for a paper not stored yet)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, date, datetime

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import PaperBot
from bot.errors import PaperwatchError
from bot.models import Paper, SearchHit, TopicRow, split_arxiv_id
from bot.render import (
    SUGGESTED_NOTE,
    clip,
    digest_view,
    inert_markdown,
    paper_compact_line,
    paper_embed,
    paper_view,
    shrink_to_fit,
)
from bot.services.history import (
    HIGHLIGHT_END,
    HIGHLIGHT_START,
    MAX_LATEST,
    MAX_SEARCH_RESULTS,
    SearchResult,
    check_latest_count,
)
from bot.services.topics import MAX_NAME_LENGTH, MAX_QUERY_LENGTH, check_query
from cogs.common import guild_id_of, paperbot, resolve_topic, services, topic_autocomplete
from cogs.pagination import Page, inline_text, pack_lines, send_pages

PER_PAGE = 5
SNIPPET_LIMIT = 320  # characters of a highlighted snippet as shown, after escaping
MAX_ID_LENGTH = 200  # an id or an arxiv.org URL
SHOWN_INPUT = 100  # how much of a user's own input an answer repeats

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MARKS = {HIGHLIGHT_START, HIGHLIGHT_END}
# "\x03 \x02" between two highlighted words: one bold run reads better than "**a** **b**".
_ADJACENT_MARKS = re.compile(f"{HIGHLIGHT_END}(\\s*){HIGHLIGHT_START}")


class InvalidPaperId(PaperwatchError):
    def __init__(self, text: str) -> None:
        super().__init__(
            f"“{inline_text(text, SHOWN_INPUT)}” is not an arXiv id. Give an id such as 2401.12345 "
            "(or 2401.12345v2, hep-th/9901001) or a link such as https://arxiv.org/abs/2401.12345."
        )


class InvalidDate(PaperwatchError):
    def __init__(self, text: str) -> None:
        super().__init__(
            f"“{inline_text(text, SHOWN_INPUT)}” is not a date. Give since as YYYY-MM-DD, e.g. 2026-01-31."
        )


def parse_since(text: str | None) -> datetime | None:
    """A YYYY-MM-DD day as midnight UTC; None for no filter."""
    if text is None:
        return None
    cleaned = text.strip()
    if not _DATE.fullmatch(cleaned):
        raise InvalidDate(text)
    try:
        day = date.fromisoformat(cleaned)
    except ValueError:  # 2026-02-30
        raise InvalidDate(text) from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _paired(text: str) -> str:
    """Keep only highlight markers that pair up (start, then end): a cut, or a stray marker in a paper's
    own text, must not leave bold open."""
    out: list[str] = []
    open_at = -1
    for ch in text:
        if ch == HIGHLIGHT_START:
            if open_at >= 0:
                continue
            open_at = len(out)
        elif ch == HIGHLIGHT_END:
            if open_at < 0:
                continue
            open_at = -1
        out.append(ch)
    if open_at >= 0:
        del out[open_at]
    return "".join(out)


def highlight(snippet: str, limit: int = SNIPPET_LIMIT) -> str:
    """The FTS5 snippet as markdown: made inert first (bot.render.inert_markdown), then the markers become
    bold, so nothing in a paper's text can format, link or ping. At most `limit` characters."""
    kept = (
        ch for ch in snippet if ch in _MARKS or ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cs")
    )
    plain = _ADJACENT_MARKS.sub(r"\1", _paired(" ".join("".join(kept).split())))
    plain = plain.replace(HIGHLIGHT_START + HIGHLIGHT_END, "")

    def render(chars: int) -> str:
        escaped = inert_markdown(_paired(clip(plain, chars)))
        return escaped.replace(HIGHLIGHT_START, "**").replace(HIGHLIGHT_END, "**")

    return shrink_to_fit(render, limit)


def search_entry(rank: int, hit: SearchHit) -> str:
    snippet = highlight(hit.snippet)
    line = f"{rank}. {paper_compact_line(hit.paper)}"
    return f"{line}\n> {snippet}" if snippet else line


def _filters_text(topic: TopicRow | None, since: datetime | None) -> str:
    parts = []
    if topic is not None:
        parts.append(f" in **{inline_text(topic.name, MAX_NAME_LENGTH)}**")
    if since is not None:
        parts.append(f" since {since.date().isoformat()}")
    return "".join(parts)


def search_pages(
    query_text: str, result: SearchResult, topic: TopicRow | None, since: datetime | None
) -> list[Page]:
    shown = f"“{inline_text(query_text, SHOWN_INPUT)}”"
    filters = _filters_text(topic, since)
    hits = result.hits
    if not hits:
        if result.unranked:
            text = unranked_none_text(shown, filters, result)
        elif result.complete:
            text = no_results_text(shown, filters)
        else:
            text = partial_none_text(shown, filters, result)
        return [Page(content=text)]
    if result.unranked:
        header = f"**Search** {shown}{filters}: {unranked_text(result, len(hits))}"
        entries = [search_entry(i, hit) for i, hit in enumerate(hits, start=1)]
        return [Page(content=text) for text in pack_lines(header, entries, per_page=PER_PAGE)]
    if not result.complete:
        best = "the best match" if len(hits) == 1 else f"the {len(hits)} best"
        count = (
            f"showing {best} of the first {result.checked:,} candidates, so there may be more: "
            "narrow the query for a full answer"
        )
    elif result.candidates > len(hits):
        count = sample_text(result, len(hits))
    elif len(hits) >= MAX_SEARCH_RESULTS:
        count = f"the {len(hits)} best results"
    else:
        count = _results(len(hits))
    order = "best match first" if result.by_relevance else "newest first"
    header = f"**Search** {shown}{filters}: {count}, {order}"
    entries = [search_entry(i, hit) for i, hit in enumerate(hits, start=1)]
    return [Page(content=text) for text in pack_lines(header, entries, per_page=PER_PAGE)]


def matching_text(result: SearchResult) -> str:
    """How many stored papers match, as counted: exactly, "more than" past the count's cap, or estimated from
    the share the exact evaluator kept when the full-text index let others through (an ANDNOT part)."""
    share = result.confirmed_share
    if share >= 1:
        return f"more than {result.candidates:,}" if result.candidates_capped else f"{result.candidates:,}"
    estimate = int(float(f"{result.candidates * share:.2g}"))  # two significant figures: it is an estimate
    return f"an estimated {estimate:,}" + (" or more" if result.candidates_capped else "")


def sample_text(result: SearchResult, shown: int) -> str:
    """The count and what is shown: 12,345 stored papers match; showing the 50 most relevant [of the 2,000 newest]."""
    which = "most relevant" if result.by_relevance else "newest"
    among = f" of the {result.sampled_from:,} newest" if result.sample and result.by_relevance else ""
    papers = "paper matches" if result.candidates == 1 else "papers match"
    return f"{matching_text(result)} stored {papers}; showing the {shown} {which}{among}"


UNRANKED = "too many papers match to rank by relevance in time"
NARROW = "a rarer word, a longer prefix, ti:, abs:, cat: or since:"


def unranked_text(result: SearchResult, shown: int) -> str:
    """What a search whose ranking ran out of time shows: the newest matches, each confirmed, and what to do."""
    matches = "match" if shown == 1 else "matches"
    among = (
        "" if result.complete else f" among the newest {result.checked:,} stored papers, so there may be more"
    )
    return (
        f"the {shown} newest {matches}{among}, ranked newest first: {UNRANKED}. "
        f"Narrow the query ({NARROW}) for the most relevant"
    )


def unranked_none_text(shown: str, filters: str, result: SearchResult) -> str:
    return (
        f"None of the newest {result.checked:,} stored papers matches {shown}{filters}, and {UNRANKED}, so "
        f"older papers may. Narrow the query so the index finds fewer candidates: {NARROW}."
    )


def _results(n: int) -> str:
    return "1 result" if n == 1 else f"{n} results"


def no_results_text(shown: str, filters: str) -> str:
    return (
        f"No stored paper matches {shown}{filters}. Try fewer or broader terms, a word prefix such as "
        "`diffus*`, OR between alternatives (`RLHF OR RLAIF`), or drop the filters. Only papers the bot "
        "has stored are searched."
    )


def partial_none_text(shown: str, filters: str, result: SearchResult) -> str:
    return (
        f"None of the first {result.checked:,} candidates matches {shown}{filters}, but the search stopped "
        "there, so stored papers further down may. Narrow the query so the index finds fewer candidates: "
        "a distinctive word in ti: or abs:, a longer prefix, a cat: filter, or since:."
    )


def latest_pages(
    topic: TopicRow, papers: Sequence[Paper], asked: int, suggested: set[str] | frozenset[str] = frozenset()
) -> list[Page]:
    name = inline_text(topic.name, MAX_NAME_LENGTH)
    if not papers:
        return [
            Page(
                content=f"No stored paper matches **{name}** yet. Papers are matched as they arrive from arXiv; "
                "/momentum shows how the topic moves week by week."
            )
        ]
    amount = f"the {len(papers)} newest" if len(papers) == asked else f"all {len(papers)} stored"
    header = f"**Latest in {name}**: {amount} matching papers, newest first"
    entries = [
        f"{i}. {paper_compact_line(p)}" + (f" · *{SUGGESTED_NOTE}*" if p.arxiv_id in suggested else "")
        for i, p in enumerate(papers, start=1)
    ]
    pages = []
    for start in range(0, len(entries), PER_PAGE):  # five short lines always fit one page
        [text] = pack_lines(header, entries[start : start + PER_PAGE], per_page=PER_PAGE)
        # The card actions of the page's papers: a menu per action, as a digest has.
        actions = tuple(digest_view(papers[start : start + PER_PAGE]).children)
        pages.append(Page(content=text, items=actions))
    return pages


class HistoryCog(commands.Cog):
    def __init__(self, bot: PaperBot) -> None:
        self.bot = bot

    @app_commands.command(name="latest", description="The newest stored papers of a topic")
    @app_commands.describe(topic="The topic to list", count="How many papers, newest first (default 5)")
    @app_commands.autocomplete(topic=topic_autocomplete)
    @app_commands.guild_only()
    async def latest(
        self,
        interaction: discord.Interaction,
        topic: app_commands.Range[str, 1, MAX_NAME_LENGTH],
        count: app_commands.Range[int, 1, MAX_LATEST] = 5,
    ) -> None:
        check_latest_count(count)  # before deferring, so the answer is private
        row = await resolve_topic(interaction, topic)
        await interaction.response.defer(thinking=True)
        history = services(interaction).history
        papers, suggested = await history.latest_with_suggestions(row, count, guild_id_of(interaction))
        await send_pages(interaction, latest_pages(row, papers, count, suggested))

    @app_commands.command(name="search", description="Search the stored papers with an arXiv-style query")
    @app_commands.describe(
        query='arXiv query syntax, e.g. GRPO AND ti:reasoning, "reward model" ANDNOT au:Smith, cat:cs.CL',
        topic="Only papers of this topic",
        since="Only papers first submitted on or after this day, as YYYY-MM-DD",
    )
    @app_commands.autocomplete(topic=topic_autocomplete)
    @app_commands.guild_only()
    async def search(
        self,
        interaction: discord.Interaction,
        query: app_commands.Range[str, 1, MAX_QUERY_LENGTH],
        topic: app_commands.Range[str, 1, MAX_NAME_LENGTH] | None = None,
        since: app_commands.Range[str, 1, 20] | None = None,
    ) -> None:
        # Every input is checked before deferring, so a mistake gets a private answer.
        parsed = check_query(query)
        since_at = parse_since(since)
        row = await resolve_topic(interaction, topic) if topic is not None else None
        await interaction.response.defer(thinking=True)
        result = await services(interaction).history.search(
            parsed, topic=row, since=since_at, guild_id=guild_id_of(interaction)
        )
        await send_pages(interaction, search_pages(query, result, row, since_at))

    @app_commands.command(name="paper", description="Show one paper's card, by arXiv id or link")
    @app_commands.describe(
        paper_id="An arXiv id (2401.12345, 2401.12345v2, hep-th/9901001) or an arxiv.org link"
    )
    @app_commands.rename(paper_id="id")
    @app_commands.guild_only()
    async def paper(
        self, interaction: discord.Interaction, paper_id: app_commands.Range[str, 1, MAX_ID_LENGTH]
    ) -> None:
        history = services(interaction).history
        guild_id = guild_id_of(interaction)
        try:
            arxiv_id, _version = split_arxiv_id(paper_id)
        except ValueError:
            raise InvalidPaperId(paper_id) from None
        paper = await history.stored(arxiv_id)
        if paper is None:
            await interaction.response.defer(thinking=True)  # arXiv asks for seconds between requests
            paper = await history.fetch(arxiv_id)
        topics = await history.topic_names(guild_id, paper)
        abstract_chars = paperbot(interaction).settings.abstract_chars
        embed = paper_embed(paper, topics=topics, abstract_chars=abstract_chars)
        if interaction.response.is_done():
            await interaction.followup.send(embed=embed, view=paper_view(paper))
        else:
            await interaction.response.send_message(embed=embed, view=paper_view(paper))


async def setup(bot: PaperBot) -> None:
    await bot.add_cog(HistoryCog(bot))

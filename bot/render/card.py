"""The paper card: embed, link buttons, compact line, thread name and console form, within every Discord limit.

Every user-visible string goes through the same steps: cut to a bounded raw length (a hostile entry may
hold megabytes), LaTeX to Unicode (bot.render.latex), whitespace collapsed, made inert where Discord renders
markdown (`inert_markdown`: no formatting, no link, no mention can come from a paper's text), mentions
neutralised, then clipped to its limit with "…". Neutralising comes last but one so nothing assembled
afterwards can form a mention; clipping only removes a tail, which cannot create one either.
"""

from __future__ import annotations

import itertools
import textwrap
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

import discord

from bot.models import Author, Paper
from bot.render.actions import add_card_actions
from bot.render.limits import (
    AUTHOR_NAME_LIMIT,
    BUTTON_LABEL_LIMIT,
    COMPACT_LINE_LIMIT,
    DESCRIPTION_LIMIT,
    EMBED_TOTAL_LIMIT,
    FIELD_VALUE_LIMIT,
    FOOTER_LIMIT,
    THREAD_NAME_LIMIT,
    TITLE_LIMIT,
    URL_LIMIT,
)
from bot.render.text import (
    SEP,
    SUGGESTED,
    SUGGESTED_NOTE,
    clean,
    clip,
    inert_fit,
    inert_markdown,
    neutralise_mentions,
    readable_text,
    safe_clip,
    shrink_to_fit,
    trim_at_sentence,
    valid_url,
)

DEFAULT_ABSTRACT_CHARS = 700
_md = inert_markdown


# Softer caps than Discord's, chosen for readability of one card.
_AFFILIATION_CHARS = 60
_CATEGORY_CHARS = 24
_OTHER_CATEGORIES_SHOWN = 3
TOPIC_CHARS = 100
_COMMENT_CHARS = 300
_JOURNAL_CHARS = 200
_INLINE_FIELD_CHARS = 60
_FOOTER_TOPICS_CHARS = 400

# How much raw text is read, at most, before any conversion: what can be shown, times a margin for LaTeX
# source being longer than its rendering ("$\mathcal{O}$" shows as one character). Real titles and
# abstracts fit (arXiv's own limits: a few hundred characters, an abstract 1,920); hostile ones are cut,
# which bounds the LaTeX work of a card to a few thousand characters.
RAW_MARGIN = 2
_AUTHORS_READ = 50  # names looked at for the ones shown; the rest are only counted
_AFFILIATION_AUTHORS_READ = 5000  # authors whose affiliations are counted (the longest real lists: ~5,000)
_CATEGORIES_READ = 20
TOPICS_READ = 50
_ID_CHARS = 64

# ---------------------------------------------------------------------------------------------------------
# Pieces of a card


def format_authors(authors: Sequence[Author], shown: int = 3, *, limit: int = AUTHOR_NAME_LIMIT) -> str:
    """Names as "A, B, C +N": the first `shown`, fewer if they would not fit in `limit` characters.

    Only the first names are read (each cut to what `limit` can show): a hostile entry may list a million
    authors or a name of megabytes, and neither may cost more than a card of ordinary ones."""
    shown = max(1, shown)
    names: list[str] = []
    read = 0
    for author in itertools.islice(authors, _AUTHORS_READ):
        read += 1
        name = clean(author.name, RAW_MARGIN * limit)
        if name:
            names.append(name)
            if len(names) == shown:
                break
    if not names:
        return ""
    total = len(names) + len(authors) - read  # names not read count as named
    # Only names that can show pay for LaTeX conversion: none after the line is full.
    readable: list[str] = []
    for name in names:
        if sum(len(n) + 2 for n in readable) > limit:
            break
        readable.append(readable_text(name) or name)
    names = readable
    count = len(names)
    while True:
        rest = f" +{total - count}" if total > count else ""
        text = ", ".join(names[:count]) + rest
        if len(text) <= limit or count == 1:
            break
        count -= 1
    if len(text) > limit:  # one very long name: clip the name, keep the count
        text = clip(names[0], max(limit - len(rest), 1)) + rest
    return clip(text, limit)


def _distinct(values: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        if value and value.casefold() not in seen:
            seen[value.casefold()] = value
    return list(seen.values())


def _affiliation_key(text: str) -> str:
    return " ".join(text[: RAW_MARGIN * _AFFILIATION_CHARS].split()).casefold()


def format_affiliations(authors: Sequence[Author], limit: int = 3) -> str | None:
    """Distinct affiliations in author order, "Tsinghua University · Tencent +2"; None when none known.

    Affiliations are counted over the first _AFFILIATION_AUTHORS_READ authors ("+N…" when more were not
    read); only the ones shown are cleaned and converted."""
    limit = max(limit, 1)
    first: dict[str, str] = {}  # distinct key -> the raw text first seen
    for author in itertools.islice(authors, _AFFILIATION_AUTHORS_READ):
        for affiliation in author.affiliations:
            key = _affiliation_key(affiliation)
            if key and key not in first:
                first[key] = affiliation
    shown: list[str] = []
    for raw in first.values():
        text = readable_text(raw, RAW_MARGIN * _AFFILIATION_CHARS)
        if text:
            shown.append(clip(text, _AFFILIATION_CHARS))
            if len(shown) == limit:
                break
    if not shown:
        return None
    more = len(first) - len(shown)
    unread = len(authors) > _AFFILIATION_AUTHORS_READ
    return SEP.join(shown) + (f" +{more}" if more > 0 else "") + ("…" if unread else "")


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _day(moment: datetime) -> str:
    return _as_utc(moment).date().isoformat()


def _categories(paper: Paper) -> tuple[str, list[str]]:
    chars = RAW_MARGIN * _CATEGORY_CHARS
    primary = clip(clean(paper.primary_category, chars), _CATEGORY_CHARS) or "arXiv"
    read = paper.categories[:_CATEGORIES_READ]
    others = _distinct(clip(clean(c, chars), _CATEGORY_CHARS) for c in read)
    return primary, [c for c in others if c.casefold() != primary.casefold()]


def _others_text(others: Sequence[str]) -> str:
    if not others:
        return ""
    shown = ", ".join(others[:_OTHER_CATEGORIES_SHOWN])
    more = len(others) - _OTHER_CATEGORIES_SHOWN
    return f" (+{shown}" + (f" +{more}" if more > 0 else "") + ")"


def _version_text(paper: Paper) -> str:
    if paper.version <= 1:
        return ""
    text = f"v{paper.version}"
    if _day(paper.updated) != _day(paper.published):
        text += f", updated {_day(paper.updated)}"
    return text


def _meta_line(paper: Paper, *, markdown: bool) -> str:
    """The line "2026-11-20 · cs.LG (+cs.AI, stat.ML) · v3": v1 date, primary category (bold in markdown), then
    how arXiv announced this version when known ("New in cs.LG", `Announcement.label`) or else the version."""
    primary, others = _categories(paper)
    if markdown:
        category = f"**{_md(primary)}**{_md(_others_text(others))}"
    else:
        category = primary + _others_text(others)
    seen = paper.announced
    announced = clean(seen.label(primary)) if seen is not None and seen.version == paper.version else ""
    announced = _md(announced) if markdown else announced
    parts = [_day(paper.published), category, announced or _version_text(paper)]
    return SEP.join(part for part in parts if part)


_PALETTE = {
    "cs": 0x5B8DEF,  # calm blue
    "stat": 0x2EC4B6,  # teal
    "math": 0x9D7CF4,  # lavender
    "eess": 0x3FB8E0,  # sky
    "econ": 0xE9B949,  # gold
    "q-fin": 0xF2A65A,  # amber
    "q-bio": 0x6CC570,  # leaf
    "quant-ph": 0xD67CF2,  # orchid
    "astro-ph": 0x7986CB,  # indigo
    "cond-mat": 0xF08A5D,  # coral
    "hep": 0xEF6F6C,  # red
    "gr-qc": 0xB39DDB,  # lilac
    "nucl": 0xE57373,  # rose
    "physics": 0xF4A259,  # orange
    "math-ph": 0xA78BFA,  # violet
    "nlin": 0x4DB6AC,  # sea green
}
_FALLBACK_COLOURS = tuple(sorted(set(_PALETTE.values())))


def category_colour(category: str) -> discord.Colour:
    """A stable colour per archive (cs, stat, math, hep-*, ...), bright enough for Discord's dark theme."""
    archive = category.split(".", 1)[0].strip().lower()
    family = "hep" if archive.startswith("hep-") else "nucl" if archive.startswith("nucl-") else archive
    if family in _PALETTE:
        return discord.Colour(_PALETTE[family])
    # Unknown archives still get a fixed colour: crc32 is stable across runs, unlike hash().
    return discord.Colour(_FALLBACK_COLOURS[zlib.crc32(family.encode()) % len(_FALLBACK_COLOURS)])


def _id_text(paper: Paper) -> str:
    return clean(paper.versioned_id, _ID_CHARS)


def _title_text(paper: Paper) -> str:
    arxiv_id = clean(paper.arxiv_id, _ID_CHARS)
    readable = readable_text(paper.title, RAW_MARGIN * TITLE_LIMIT)
    return readable or (f"arXiv:{arxiv_id}" if arxiv_id else "Untitled paper")


@dataclass(frozen=True, slots=True)
class _Abstract:
    """The abstract made readable once, for up to `chars` characters; trimmed to any length below."""

    text: str
    cut: bool  # the raw text was longer than what was read

    @classmethod
    def of(cls, paper: Paper, chars: int) -> _Abstract:
        raw_cap = RAW_MARGIN * max(chars, 0) + 200
        return cls(readable_text(paper.abstract, raw_cap), len(paper.abstract) > raw_cap)

    def trimmed(self, chars: int) -> str:
        if self.cut and self.text:
            chars = min(chars, len(self.text) - 1)  # the raw cut must still show as "…"
        return trim_at_sentence(self.text, chars)


def _abstract_text(paper: Paper, chars: int) -> str:
    return _Abstract.of(paper, chars).trimmed(chars)


def _topics_text(topics: Sequence[str]) -> str:
    names = _distinct(
        clip(clean(t, RAW_MARGIN * TOPIC_CHARS), TOPIC_CHARS) for t in topics[:TOPICS_READ] if t != SUGGESTED
    )
    note = f" ({SUGGESTED_NOTE})" if SUGGESTED in topics else ""
    return clip("Matched: " + SEP.join(names), _FOOTER_TOPICS_CHARS - len(note)) + note if names else ""


def _note(text: str | None, limit: int) -> str:
    """A comment or journal ref, readable and clipped; the raw text is cut first to bound LaTeX work."""
    return clip(readable_text(text, RAW_MARGIN * limit), limit)


def _doi_parts(paper: Paper) -> tuple[str, str | None]:
    """(DOI shown, its https://doi.org link or None). arXiv may list several DOIs: link the first."""
    doi = clean(paper.doi, URL_LIMIT)
    first = doi.split(" ")[0] if doi else ""
    return doi, valid_url(f"https://doi.org/{quote(first, safe='/')}") if first else None


# ---------------------------------------------------------------------------------------------------------
# The embed


def _fields(paper: Paper) -> list[tuple[str, str, bool]]:
    """(name, value, inline) for comment, journal ref and DOI when present; values already markdown-safe."""
    fields: list[tuple[str, str, bool]] = []
    comment = _note(paper.comment, _COMMENT_CHARS)
    if comment:
        fields.append(("Comment", _md(comment), len(comment) <= _INLINE_FIELD_CHARS))
    journal = _note(paper.journal_ref, _JOURNAL_CHARS)
    if journal:
        fields.append(("Journal", _md(journal), len(journal) <= _INLINE_FIELD_CHARS))
    doi, doi_url = _doi_parts(paper)
    if doi:
        shown = clip(doi, _JOURNAL_CHARS)
        # The bot's own link: its target is doi.org, whatever the DOI's text says.
        value = f"[{_md(shown)}]({doi_url})" if doi_url else _md(shown)
        fields.append(("DOI", value, True))
    return [(name, safe_clip(value, FIELD_VALUE_LIMIT), inline) for name, value, inline in fields if value]


# Abstract characters a card keeps before its notes fields and its affiliations line give way.
_DESCRIPTION_KEPT = 250


def _abstract_body(paper: Paper, chars: int, room: int) -> str:
    """The abstract as inert markdown in at most `room` characters, trimmed to `chars` or fewer."""
    chars = min(max(chars, 0), room)
    if chars <= 0:
        return ""
    abstract = _Abstract.of(paper, chars)  # converted once; only trimming and escaping repeat
    return shrink_to_fit(lambda n: _md(abstract.trimmed(n)), room, start=chars)


def _heads(paper: Paper) -> list[str]:
    """The description's first lines, fullest first: affiliations and the meta line, or the meta line."""
    meta = _meta_line(paper, markdown=True)
    affiliations = format_affiliations(paper.authors)
    heads = [f"*{_md(affiliations)}*\n{meta}", meta] if affiliations else [meta]
    return [neutralise_mentions(head) for head in heads]


def _description(paper: Paper, heads: Sequence[str], budget: int, abstract_chars: int) -> str:
    """A head, then the abstract sized so the escaped whole fits in `budget`. When room is short the
    affiliations line goes first, then the abstract shrinks."""
    fitting = [h for h in heads if len(h) <= budget]
    if not fitting:
        return ""
    wanted = min(max(abstract_chars, 0), _DESCRIPTION_KEPT) + 2  # 2: the blank line
    head = next((h for h in fitting if budget - len(h) >= wanted), fitting[-1])
    body = _abstract_body(paper, abstract_chars, budget - len(head) - 2)
    return f"{head}\n\n{body}" if body else head


def paper_embed(
    paper: Paper,
    *,
    topics: Sequence[str] = (),
    abstract_chars: int = DEFAULT_ABSTRACT_CHARS,
    authors_shown: int = 3,
    budget: int = EMBED_TOTAL_LIMIT,
) -> discord.Embed:
    """The paper card: authors above a linked title, affiliations and meta line, the abstract, notes fields,
    matched topics in the footer, a colour per archive and the v1 date as timestamp.

    At most `budget` characters count toward the message's 6,000 (cards of a digest share them). What
    gives way to a small budget: the notes fields (DOI, journal, comment), then the affiliations line, then
    the abstract; only a budget too small for those clips the footer, the authors and the title."""
    budget = min(max(budget, 1), EMBED_TOTAL_LIMIT)
    embed = discord.Embed(
        title=safe_clip(_title_text(paper), TITLE_LIMIT),
        url=valid_url(paper.abs_url),
        colour=category_colour(paper.primary_category),
        timestamp=_as_utc(paper.published),
    )
    authors = format_authors(paper.authors, shown=authors_shown)
    if authors:
        embed.set_author(name=safe_clip(authors, AUTHOR_NAME_LIMIT))
    for name, value, inline in _fields(paper):
        embed.add_field(name=name, value=value, inline=inline)
    # " • " like Discord's own separator before the timestamp; " · " stays inside the topic list.
    footer = " • ".join(p for p in (_topics_text(topics), f"arXiv:{_id_text(paper)}") if p)
    embed.set_footer(text=safe_clip(footer, FOOTER_LIMIT))
    heads = _heads(paper)
    kept = len(heads[0]) + 2 + min(max(abstract_chars, 0), _DESCRIPTION_KEPT)
    while embed.fields and budget - embed_size(embed) < kept:
        embed.remove_field(-1)
    room = min(DESCRIPTION_LIMIT, budget - embed_size(embed))
    embed.description = _description(paper, heads, room, abstract_chars) or None
    _squeeze(embed, budget)
    return embed


def embed_size(embed: discord.Embed) -> int:
    """Characters Discord counts toward the 6000 total: title, description, field names and values, footer
    text and author name."""
    parts = [embed.title, embed.description, embed.footer.text, embed.author.name]
    parts += [text for field in embed.fields for text in (field.name, field.value)]
    return sum(len(part) for part in parts if part)


def paper_view(paper: Paper, *, actions: bool = True) -> discord.ui.View:
    """Link buttons Abstract / PDF / HTML, and under them the card's actions (bot.render.actions), whose
    custom ids carry all they need: timeout=None and no state. Safe to build with or without a running event
    loop (discord.py 2.7 creates its future lazily)."""
    view = discord.ui.View(timeout=None)
    for label, url in (("Abstract", paper.abs_url), ("PDF", paper.pdf_url), ("HTML", paper.html_url)):
        valid = valid_url(url)
        if valid:
            view.add_item(discord.ui.Button(label=label[:BUTTON_LABEL_LIMIT], url=valid, row=0))
    if actions:
        add_card_actions(view, paper, row=1)
    return view


def _squeeze(embed: discord.Embed, budget: int) -> None:
    """Last resort for a tiny budget: clip the footer, then the author line, then the title."""
    over = embed_size(embed) - budget
    if over > 0 and embed.footer.text:
        text = clip(embed.footer.text, len(embed.footer.text) - over)
        if text:
            embed.set_footer(text=text)
        else:
            embed.remove_footer()
        over = embed_size(embed) - budget
    if over > 0 and embed.author.name:
        name = clip(embed.author.name, len(embed.author.name) - over)
        if name:
            embed.set_author(name=name)
        else:
            embed.remove_author()
        over = embed_size(embed) - budget
    if over > 0 and embed.title:
        embed.title = clip(embed.title, max(len(embed.title) - over, 1))


# ---------------------------------------------------------------------------------------------------------
# Other renderings


def paper_compact_line(paper: Paper) -> str:
    """One markdown line for lists and digests: "[Title](<abs_url>) — A, B +3 · cs.LG · 2026-11-20".
    The <> around the URL stops Discord from unfurling a preview for every line."""
    authors = format_authors(paper.authors, shown=2, limit=80)
    primary, _ = _categories(paper)
    tail_parts = [_md(authors), _md(primary), _day(paper.published)]
    tail = " — " + SEP.join(part for part in tail_parts if part)
    url = valid_url(paper.abs_url)
    avail = COMPACT_LINE_LIMIT - len(tail) - (len(f"[](<{url}>)") if url else 0)
    shown = inert_fit(_title_text(paper), avail)
    head = f"[{shown}](<{url}>)" if url and shown else shown
    return safe_clip(head + tail, COMPACT_LINE_LIMIT)


def thread_name(paper: Paper) -> str:
    """Forum post title: the readable title in at most 100 characters, never empty."""
    name = safe_clip(_title_text(paper), THREAD_NAME_LIMIT)
    return name or "Untitled paper"


def paper_console(
    paper: Paper,
    *,
    topics: Sequence[str] = (),
    width: int = 100,
    abstract_chars: int = DEFAULT_ABSTRACT_CHARS,
) -> str:
    """The card as plain text for a terminal (the `preview` command): same content, wrapped to `width`."""
    width = max(width, 20)
    wrapper = textwrap.TextWrapper(width=width, break_long_words=True, break_on_hyphens=False)

    def wrap(text: str) -> list[str]:
        # Neutralised before wrapping so the zero-width space counts toward the width.
        return wrapper.wrap(neutralise_mentions(text))

    lines: list[str] = wrap(_title_text(paper))
    lines += wrap(format_authors(paper.authors, limit=width * 2))
    lines += wrap(format_affiliations(paper.authors) or "")
    lines += wrap(_meta_line(paper, markdown=False) + SEP + f"arXiv:{_id_text(paper)}")
    abstract = _abstract_text(paper, max(abstract_chars, 0))
    if abstract:
        lines += ["", *wrap(abstract)]
    notes = [
        ("Comment", _note(paper.comment, _COMMENT_CHARS)),
        ("Journal", _note(paper.journal_ref, _JOURNAL_CHARS)),
        ("DOI", _doi_parts(paper)[0]),
        ("", _topics_text(topics)),
    ]
    notes_lines = [wrap(f"{label}: {text}" if label else text) for label, text in notes if text]
    if notes_lines:
        lines.append("")
        lines += [line for block in notes_lines for line in block]
    lines += ["", *wrap(paper.abs_url[:URL_LIMIT])]
    rule = "─" * min(width, 100)
    return "\n".join([rule, *lines, rule])

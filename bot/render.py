"""Paper -> Discord embed, link buttons, one-line and console text: pure functions within every Discord limit.

Every user-visible string goes through the same steps: LaTeX to Unicode (bot.latex), whitespace collapsed,
markdown escaped where Discord renders markdown, mentions neutralised, then clipped to its limit with "…".
Neutralising comes last but one so nothing assembled afterwards can form a mention; clipping only removes
a tail, which cannot create one either.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
import zlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from urllib.parse import quote

import discord

from bot.latex import latex_to_text
from bot.models import Author, Paper

__all__ = [
    "DEFAULT_ABSTRACT_CHARS",
    "category_colour",
    "clip",
    "embed_size",
    "format_affiliations",
    "format_authors",
    "neutralise_mentions",
    "paper_compact_line",
    "paper_console",
    "paper_embed",
    "paper_view",
    "thread_name",
    "trim_at_sentence",
]

DEFAULT_ABSTRACT_CHARS = 700

# Discord limits (characters = Unicode code points, as Discord's API counts them).
TITLE_LIMIT = 256
DESCRIPTION_LIMIT = 4096
FIELD_NAME_LIMIT = 256
FIELD_VALUE_LIMIT = 1024
FOOTER_LIMIT = 2048
AUTHOR_NAME_LIMIT = 256
EMBED_TOTAL_LIMIT = 6000
BUTTON_LABEL_LIMIT = 80
URL_LIMIT = 512
THREAD_NAME_LIMIT = 100
COMPACT_LINE_LIMIT = 300

ELLIPSIS = "…"
SEP = " · "
_ZWSP = "\u200b"

# Softer caps than Discord's, chosen for readability of one card.
_AFFILIATION_CHARS = 60
_CATEGORY_CHARS = 24
_OTHER_CATEGORIES_SHOWN = 3
_TOPIC_CHARS = 100
_COMMENT_CHARS = 300
_JOURNAL_CHARS = 200
_INLINE_FIELD_CHARS = 60
_FOOTER_TOPICS_CHARS = 400

# ---------------------------------------------------------------------------------------------------------
# Text primitives


def _clean(text: str | None) -> str:
    """Collapse whitespace and drop control/surrogate code points (Discord rejects or mangles them)."""
    if not text:
        return ""
    kept = (ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs") or ch.isspace())
    return " ".join("".join(kept).split())


def _readable(text: str | None) -> str:
    """LaTeX made readable, only when the text looks like it has any (pylatexenc is the costly step)."""
    cleaned = _clean(text)
    if any(ch in cleaned for ch in "$\\{}^_~%"):
        return _clean(latex_to_text(cleaned))
    return cleaned


def clip(text: str, limit: int, *, words: bool = True) -> str:
    """Fit text in `limit` characters, ending in "…" when cut (at a word boundary when one is close)."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    head = text[: limit - 1]
    if words:
        space = head.rfind(" ")
        if space >= limit * 0.7:
            head = head[:space]
    head = head.rstrip()
    # An odd run of trailing backslashes would escape the ellipsis in markdown.
    trailing = len(head) - len(head.rstrip("\\"))
    if trailing % 2:
        head = head[:-1]
    return head + ELLIPSIS


_MASS_MENTION = re.compile(r"@(everyone|here)", re.IGNORECASE)
_ID_MENTION = re.compile(r"<(@[!&]?|#)(?=\d)")


def neutralise_mentions(text: str) -> str:
    """Break @everyone, @here, <@id>, <@!id>, <@&id> and <#id> with a zero-width space so the text neither
    pings nor renders as a mention; it still reads the same."""
    text = _MASS_MENTION.sub("@" + _ZWSP + r"\1", text)
    return _ID_MENTION.sub(r"<\1" + _ZWSP, text)


def _md(text: str) -> str:
    """Plain text made safe for Discord markdown (description, field values, message content)."""
    return discord.utils.escape_markdown(text)


def _md_link_text(text: str) -> str:
    return _md(text).replace("[", "\\[").replace("]", "\\]")


def _safe(text: str, limit: int) -> str:
    return clip(neutralise_mentions(text), limit)


_URL = re.compile(r"https://[A-Za-z0-9._~/%+\-]+")


def _valid_url(url: str | None) -> str | None:
    """Only plain https URLs Discord will accept for embeds and link buttons."""
    if url and len(url) <= URL_LIMIT and _URL.fullmatch(url):
        return url
    return None


_SENTENCE_END = re.compile(r"[.!?][\"')\]”’]*(?=\s+[\"'(\[“‘]?[A-Z0-9])")
# Abbreviations whose full stop is not a sentence end ("et al. Smith", "Fig. 3", "e.g. BERT").
_ABBREVIATIONS = frozenset(
    [
        "al",
        "e.g",
        "i.e",
        "cf",
        "vs",
        "fig",
        "figs",
        "eq",
        "eqs",
        "sec",
        "ref",
        "refs",
        "no",
        "dr",
        "mr",
        "ms",
        "prof",
        "approx",
        "resp",
        "st",
        "ca",
    ]
)


def _is_abbreviation(text: str, dot: int) -> bool:
    start = text.rfind(" ", 0, dot) + 1
    word = text[start:dot].lower().lstrip("([\"'")
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def trim_at_sentence(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters, at the last sentence end if one falls in the last ~40%,
    else at a word; "…" marks a cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[: max(limit, 0)]
    window = text[: limit - 1]  # room for the ellipsis
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if not _is_abbreviation(window, m.start())]
    if ends and ends[-1] >= limit * 0.6 and ends[-1] <= limit - 2:
        return window[: ends[-1]] + " " + ELLIPSIS
    return clip(text, limit)


# ---------------------------------------------------------------------------------------------------------
# Pieces of a card


def format_authors(authors: Sequence[Author], shown: int = 3, *, limit: int = AUTHOR_NAME_LIMIT) -> str:
    """Names as "A, B, C +N": the first `shown`, fewer if they would not fit in `limit` characters."""
    raw = [name for name in (_clean(author.name) for author in authors) if name]
    if not raw:
        return ""
    count = max(1, min(shown, len(raw)))
    # Only the names on show pay for LaTeX conversion: a paper may list 500 authors.
    names = [_readable(name) or name for name in raw[:count]] + raw[count:]
    while count >= 1:
        rest = f" +{len(names) - count}" if len(names) > count else ""
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


def format_affiliations(authors: Sequence[Author], limit: int = 3) -> str | None:
    """Distinct affiliations in author order, "Tsinghua University · Tencent +2"; None when none known."""
    distinct = _distinct(_clean(aff) for author in authors for aff in author.affiliations)
    if not distinct:
        return None
    limit = max(limit, 1)
    shown = [clip(_readable(aff) or aff, _AFFILIATION_CHARS) for aff in distinct[:limit]]
    more = len(distinct) - limit
    return SEP.join(shown) + (f" +{more}" if more > 0 else "")


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _day(moment: datetime) -> str:
    return _as_utc(moment).date().isoformat()


def _categories(paper: Paper) -> tuple[str, list[str]]:
    primary = clip(_clean(paper.primary_category), _CATEGORY_CHARS) or "arXiv"
    others = _distinct(clip(_clean(c), _CATEGORY_CHARS) for c in paper.categories)
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
    announced = _clean(seen.label(primary)) if seen is not None and seen.version == paper.version else ""
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


def _title_text(paper: Paper) -> str:
    arxiv_id = _clean(paper.arxiv_id)
    return _readable(paper.title[:1024]) or (f"arXiv:{arxiv_id}" if arxiv_id else "Untitled paper")


def _abstract_text(paper: Paper, chars: int) -> str:
    """Readable abstract trimmed to `chars`; the raw text is cut first so pylatexenc never sees megabytes."""
    raw_cap = 4 * chars + 500
    raw = paper.abstract[:raw_cap]
    text = _readable(raw)
    if len(paper.abstract) > raw_cap and text:
        chars = min(chars, len(text) - 1)  # the raw cut must still show as "…"
    return trim_at_sentence(text, chars)


SUGGESTED = "\x00suggested"
"""A mark among a card's topics: the learned scorer put the paper there, not the query (the card says why)."""
SUGGESTED_NOTE = "suggested: close to this topic's papers"


def _topics_text(topics: Sequence[str]) -> str:
    names = _distinct(clip(_clean(t), _TOPIC_CHARS) for t in topics if t != SUGGESTED)
    note = f" ({SUGGESTED_NOTE})" if SUGGESTED in topics else ""
    return clip("Matched: " + SEP.join(names), _FOOTER_TOPICS_CHARS - len(note)) + note if names else ""


def _note(text: str | None, limit: int) -> str:
    """A comment or journal ref, readable and clipped; the raw text is cut first to bound LaTeX work."""
    return clip(_readable((text or "")[: 4 * limit]), limit)


def _doi_parts(paper: Paper) -> tuple[str, str | None]:
    """(DOI shown, its https://doi.org link or None). arXiv may list several DOIs: link the first."""
    doi = _clean((paper.doi or "")[:URL_LIMIT])
    first = doi.split(" ")[0] if doi else ""
    return doi, _valid_url(f"https://doi.org/{quote(first, safe='/')}") if first else None


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
        value = f"[{_md_link_text(shown)}]({doi_url})" if doi_url else _md(shown)
        fields.append(("DOI", value, True))
    return [(name, _safe(value, FIELD_VALUE_LIMIT), inline) for name, value, inline in fields if value]


def _description(paper: Paper, budget: int, abstract_chars: int) -> str:
    """Affiliations, the meta line, then the abstract sized so the escaped whole fits in `budget`."""
    header = []
    affiliations = format_affiliations(paper.authors)
    if affiliations:
        header.append(f"*{_md(affiliations)}*")
    header.append(_meta_line(paper, markdown=True))
    head = neutralise_mentions("\n".join(header))
    room = budget - len(head) - 2  # the blank line between header and abstract
    chars = min(max(abstract_chars, 0), room)
    body = ""
    while chars > 0:
        body = neutralise_mentions(_md(_abstract_text(paper, chars)))
        if len(body) <= room:
            break
        # Escaping grows the text: shrink in proportion, by at least one character.
        chars = min(chars - 1, chars * room // max(len(body), 1))
        body = ""
    return clip(f"{head}\n\n{body}" if body else head, budget)


def paper_embed(
    paper: Paper,
    *,
    topics: Sequence[str] = (),
    abstract_chars: int = DEFAULT_ABSTRACT_CHARS,
    authors_shown: int = 3,
) -> discord.Embed:
    """The paper card: authors above a linked title, affiliations and meta line, the abstract, notes fields,
    matched topics in the footer, a colour per archive and the v1 date as timestamp."""
    embed = discord.Embed(
        title=_safe(_title_text(paper), TITLE_LIMIT),
        url=_valid_url(paper.abs_url),
        colour=category_colour(paper.primary_category),
        timestamp=_as_utc(paper.published),
    )
    authors = format_authors(paper.authors, shown=authors_shown)
    if authors:
        embed.set_author(name=_safe(authors, AUTHOR_NAME_LIMIT))
    for name, value, inline in _fields(paper):
        embed.add_field(name=name, value=value, inline=inline)
    # " • " like Discord's own separator before the timestamp; " · " stays inside the topic list.
    footer = " • ".join(p for p in (_topics_text(topics), f"arXiv:{_clean(paper.versioned_id)}") if p)
    embed.set_footer(text=_safe(footer, FOOTER_LIMIT))
    budget = min(DESCRIPTION_LIMIT, EMBED_TOTAL_LIMIT - embed_size(embed))
    embed.description = _description(paper, budget, abstract_chars) or None
    return embed


def embed_size(embed: discord.Embed) -> int:
    """Characters Discord counts toward the 6000 total: title, description, field names and values, footer
    text and author name."""
    parts = [embed.title, embed.description, embed.footer.text, embed.author.name]
    parts += [text for field in embed.fields for text in (field.name, field.value)]
    return sum(len(part) for part in parts if part)


def paper_view(paper: Paper) -> discord.ui.View:
    """Link buttons Abstract / PDF / HTML. Link buttons need no callbacks, so timeout=None and no state;
    safe to build with or without a running event loop (discord.py 2.7 creates its future lazily)."""
    view = discord.ui.View(timeout=None)
    for label, url in (("Abstract", paper.abs_url), ("PDF", paper.pdf_url), ("HTML", paper.html_url)):
        valid = _valid_url(url)
        if valid:
            view.add_item(discord.ui.Button(label=label[:BUTTON_LABEL_LIMIT], url=valid))
    return view


# ---------------------------------------------------------------------------------------------------------
# Other renderings


def paper_compact_line(paper: Paper) -> str:
    """One markdown line for lists and digests: "[Title](<abs_url>) — A, B +3 · cs.LG · 2026-11-20".
    The <> around the URL stops Discord from unfurling a preview for every line."""
    authors = format_authors(paper.authors, shown=2, limit=80)
    primary, _ = _categories(paper)
    tail_parts = [_md(authors), _md(primary), _day(paper.published)]
    tail = " — " + SEP.join(part for part in tail_parts if part)
    url = _valid_url(paper.abs_url)
    escape = _md_link_text if url else _md
    avail = COMPACT_LINE_LIMIT - len(tail) - (len(f"[](<{url}>)") if url else 0)
    title, chars, shown = _title_text(paper), avail, ""
    while chars > 0:
        shown = escape(clip(title, chars))
        if len(shown) <= avail:
            break
        chars = min(chars - 1, chars * avail // len(shown))  # escaping grew it: shrink in proportion
        shown = ""
    head = f"[{shown}](<{url}>)" if url and shown else shown
    return _safe(head + tail, COMPACT_LINE_LIMIT)


def thread_name(paper: Paper) -> str:
    """Forum post title: the readable title in at most 100 characters, never empty."""
    name = _safe(_title_text(paper), THREAD_NAME_LIMIT)
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
    lines += wrap(_meta_line(paper, markdown=False) + SEP + f"arXiv:{_clean(paper.versioned_id)}")
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
    lines += ["", *wrap(paper.abs_url)]
    rule = "─" * min(width, 100)
    return "\n".join([rule, *lines, rule])

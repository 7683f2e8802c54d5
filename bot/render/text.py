"""Text for Discord: cleaning, clipping, inert markdown, mention neutralising, and the one "escape, then shrink
to fit" loop; also small helpers for lists of names and lines. Pure functions of strings."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

from bot.render.latex import latex_to_text
from bot.render.limits import URL_LIMIT

ELLIPSIS = "…"
SEP = " · "
_ZWSP = "\u200b"


# Control and surrogate code points other than whitespace (Discord rejects or mangles them), as one class.
_UNWANTED = re.compile(
    "["
    + "".join(
        re.escape(chr(c))
        for c in [*range(0x20), *range(0x7F, 0xA0)]
        if unicodedata.category(chr(c)) == "Cc" and not chr(c).isspace()
    )
    + "\ud800-\udfff]"
)


def clean(text: str | None, chars: int | None = None) -> str:
    """At most `chars` raw characters, control/surrogate code points dropped, whitespace collapsed."""
    if not text:
        return ""
    if chars is not None:
        text = text[:chars]
    return " ".join(_UNWANTED.sub("", text).split())


_DOLLAR = re.compile(r"(?<!\\)\$")


def readable_text(text: str | None, chars: int | None = None) -> str:
    """LaTeX made readable, only when the text looks like it has any (pylatexenc is the costly step).
    Cut to `chars` raw characters first, and back before a `$` the cut would leave open."""
    if text and chars is not None and len(text) > chars:
        text = text[:chars]
        dollars = [m.start() for m in _DOLLAR.finditer(text)]
        if len(dollars) % 2:
            text = text[: dollars[-1]]
    cleaned = clean(text)
    if any(ch in cleaned for ch in "$\\{}^_~%"):
        return clean(latex_to_text(cleaned))
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


# Every character Discord's markdown gives a meaning to anywhere in a line: emphasis, code, spoilers,
# quotes, headings, masked links ([ ]), angle-bracket links, mentions, emoji and timestamps (<), and the
# escape itself. A backslash before any punctuation shows it as it is, so escaping them all is always safe.
_MARKDOWN_CHAR = re.compile(r"[\\*_~`|\[\]<>#]")
# A scheme's "://" (https://, steam://...): Discord would make the text a link, and in message content
# unfurl a preview written by whoever owns the address.
_AUTOLINK = re.compile(r"(?<=[A-Za-z0-9])://")
# Line starts that open a list, a numbered list or a subtext line ("- ", "+ ", "1. ", "-# ").
_LINE_START = re.compile(r"^(\s*)([-+](?=\s|$)|\d+(?=[.)](?:\s|$)))", re.MULTILINE)


def inert_markdown(text: str) -> str:
    """Text from a paper (or a user) made inert for Discord markdown, wherever it lands in a line: it shows
    as written but can format nothing, link nowhere and ping nobody. The one escaping function of the bot.

    discord.utils.escape_markdown is not enough: it escapes only the first `[` of a line, so a second
    "[text](https://elsewhere)" stays a live link whose text lies about its target; and it leaves URLs be."""
    text = _MARKDOWN_CHAR.sub(r"\\\g<0>", text)
    text = _AUTOLINK.sub(r"\\://", text)
    text = _LINE_START.sub(lambda m: m.group(1) + _escape_line_start(m.group(2)), text)
    return neutralise_mentions(text)


def _escape_line_start(marker: str) -> str:
    # "- x" and "+ x" get the backslash before the sign, "1. x" before the dot.
    return "\\" + marker if marker in "-+" else marker + "\\"


def safe_clip(text: str, limit: int) -> str:
    """Mentions neutralised, then clipped to `limit` (clipping only removes a tail: it cannot form one)."""
    return clip(neutralise_mentions(text), limit)


_URL = re.compile(r"https://[A-Za-z0-9._~/%+\-]+")


def valid_url(url: str | None) -> str | None:
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


def shrink_to_fit(render: Callable[[int], str], limit: int, start: int | None = None) -> str:
    """The one "escape, then shrink" loop: `render(chars)` shows at most `chars` characters of some text
    made inert, which escaping makes longer. Tries `start` (default `limit`) characters, then fewer, in
    proportion to how much the last try overshot, until the result fits in `limit`; "" if nothing does."""
    chars = limit if start is None else start
    while chars > 0:
        text = render(chars)
        if len(text) <= limit:
            return text
        chars = min(chars - 1, chars * limit // max(len(text), 1))
    return ""


def inert_fit(text: str, limit: int) -> str:
    """Paper or user text as inert markdown in at most `limit` characters, clipped before escaping so a cut
    never splits an escape."""
    return shrink_to_fit(lambda chars: inert_markdown(clip(text, chars)), limit)


def human_join(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def fit_lines(lines: Sequence[str], limit: int, sep: str = "\n") -> str:
    """As many whole lines as fit in `limit` characters, then "+N more" for the rest."""
    if len(sep.join(lines)) <= limit:
        return sep.join(lines)
    best: int | None = None
    shown_size = 0  # len(sep.join(lines[:shown]))
    for shown, line in enumerate(lines):
        if shown_size + len(sep) * bool(shown) + len(f"+{len(lines) - shown} more") <= limit:
            best = shown
        shown_size += len(sep) * bool(shown) + len(line)
        if shown_size > limit:
            break
    if best is None:
        return clip(f"+{len(lines)} more", limit)
    return sep.join([*lines[:best], f"+{len(lines) - best} more"])


def safe_name(name: str, limit: int = 100) -> str:
    """A user-given name as markdown text on one line: no pings, no formatting, no link. `limit` counts the
    name's characters (the escapes come on top), so a name is cut where the user sees it."""
    return inert_markdown(clip(" ".join(name.split()), limit))


def code_block(text: str) -> str:
    """Text shown verbatim; a backtick would close the block, so it becomes a look-alike."""
    return "```\n" + text.strip().replace("`", "ˋ") + "\n```"


SUGGESTED = "\x00suggested"
"""A mark among a card's topics: the learned scorer put the paper there, not the query (the card says why)."""
SUGGESTED_NOTE = "suggested: close to this topic's papers"

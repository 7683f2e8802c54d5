"""A reading list as BibTeX, the way arXiv's own export writes a paper (@misc with eprint, archivePrefix and
primaryClass), so that Zotero, JabRef and biblatex read it as an arXiv preprint.

Titles and names are arXiv's LaTeX source: made readable Unicode first (bot.render.latex, so a stray brace or
dollar of the source cannot unbalance the entry), then encoded back to LaTeX by pylatexenc's encoder,
which escapes every special (& % $ # _ { } ~ ^ \\) and accent, each braced. bibtexparser writes the file (and
reads it back in the tests)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from bibtexparser import model
from bibtexparser.entrypoint import write_string
from bibtexparser.library import Library
from pylatexenc.latexencode import RULE_DICT, UnicodeToLatexConversionRule, UnicodeToLatexEncoder

from bot.models import Paper
from bot.render.latex import latex_to_text

# pylatexenc writes ^ and ~ as accents on nothing (\\^{}), which readers turn into modifier letters: the text
# commands read back as the characters themselves.
_PLAIN = {ord("^"): r"\textasciicircum", ord("~"): r"\textasciitilde"}
_ENCODER = UnicodeToLatexEncoder(
    conversion_rules=[UnicodeToLatexConversionRule(RULE_DICT, _PLAIN), "defaults"],
    unknown_char_policy="keep",
    replacement_latex_protection="braces-all",
)
_KEY_WORD = re.compile(r"[A-Za-z0-9]+")
_STOP_WORDS = frozenset(
    {"a", "an", "the", "on", "of", "for", "in", "to", "and", "with", "via", "towards", "is"}
)
_AND = re.compile(r"\band\b", re.IGNORECASE)


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def _latex(text: str) -> str:
    """Readable text as LaTeX that BibTeX reads back to the same text."""
    encoded: str = _ENCODER.unicode_to_latex(" ".join(latex_to_text(text).split()))
    return encoded


def _surname(name: str) -> str:
    words = _KEY_WORD.findall(_ascii(name))
    return words[-1].lower() if words else "anon"


def _title_word(title: str) -> str:
    words: list[str] = _KEY_WORD.findall(_ascii(latex_to_text(title)))
    for word in words:
        if word.lower() not in _STOP_WORDS:
            return word.lower()
    return "paper"


def citation_key(paper: Paper) -> str:
    """surname + year + first significant title word, ASCII only: `lovelace2026group`."""
    first = paper.authors[0].name if paper.authors else ""
    return f"{_surname(first)}{paper.published.year}{_title_word(paper.title)}"


def _author(name: str) -> str:
    """One name as BibTeX reads names; a name holding the word "and" (a collaboration) braced whole, so it
    is not split into two people."""
    encoded = _latex(name)
    return f"{{{encoded}}}" if _AND.search(name) else encoded


def _keys(papers: Sequence[Paper]) -> list[str]:
    """Citation keys, unique in the file: a second `lovelace2026group` becomes `lovelace2026groupb`."""
    seen: dict[str, int] = {}
    keys = []
    for paper in papers:
        key = citation_key(paper)
        count = seen.get(key, 0)
        seen[key] = count + 1
        keys.append(key if count == 0 else f"{key}{_suffix(count)}")
    return keys


def _suffix(count: int) -> str:
    letters = ""
    count += 1  # the second one is "b"
    while count:
        count, rest = divmod(count - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


def bibtex_entries(papers: Iterable[Paper]) -> str:
    """One @misc entry per paper, in the order given."""
    listed = list(papers)
    library = Library()
    for paper, key in zip(listed, _keys(listed), strict=True):
        fields = [
            model.Field("author", " and ".join(_author(a.name) for a in paper.authors) or "Anonymous"),
            model.Field("title", _latex(paper.title)),
            model.Field("year", str(paper.published.year)),
            model.Field("eprint", paper.arxiv_id),
            model.Field("archivePrefix", "arXiv"),
            model.Field("primaryClass", paper.primary_category),
            model.Field("url", paper.abs_url),
        ]
        if paper.doi:
            fields.append(model.Field("doi", _latex(paper.doi)))
        library.add(model.Entry("misc", key, fields))
    return write_string(library) if listed else ""


__all__ = ["bibtex_entries", "citation_key"]

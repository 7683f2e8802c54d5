"""/ask's answer and /brief's summary as one Discord message (and as terminal text). The sentences come from
abstracts or from a language model: untrusted text, made readable and inert here like every card's, so it
cannot ping, link or format; each statement keeps only its citations, numbers of the papers listed below it.
The links are the bot's own (the papers' arXiv pages)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.answers import Answer, Brief, Cited
from bot.models import Paper
from bot.render.card import format_authors, paper_compact_line
from bot.render.limits import CONTENT_LIMIT
from bot.render.text import clean, clip, inert_markdown, readable_text, safe_name, shrink_to_fit

SHOWN_QUESTION = 150  # characters of the question the answer repeats
STATEMENT_CHARS = 400  # at most, per statement, before the message's own limit shrinks them
EXTRACTIVE_NOTE = "Sentences quoted from the abstracts of the stored papers; [n] is the paper listed below."
MODEL_NOTE = "Written by a language model from the abstracts below only; check a claim against its [n]."
NO_ANSWER = "None of the stored papers answers that directly. The closest:"
NO_PAPERS = (
    "No stored paper is about that{scope}. Try other words (the answer comes from titles and abstracts), "
    "a broader topic, or an earlier since."
)


def _scope(topic: str | None, since_day: str | None) -> str:
    parts = []
    if topic:
        parts.append(f" in **{safe_name(topic, 100)}**")
    if since_day:
        parts.append(f" since {since_day}")
    return "".join(parts)


def _cites(sources: Sequence[int]) -> str:
    return "".join(f" [{n}]" for n in sources)


def _statement(cited: Cited, chars: int) -> str:
    text = readable_text(cited.text, 2 * chars)  # LaTeX made readable; a hostile length cut first
    return inert_markdown(clip(text, chars)) + _cites(cited.sources)


def _sources(papers: Sequence[Paper]) -> list[str]:
    return [f"[{n}] {paper_compact_line(p)}" for n, p in enumerate(papers, start=1)]


def _fit(head: str, statements: Sequence[Cited], tail: Sequence[str], prefix: str = "> ") -> str:
    """The head, the statements (shrunk together as needed), then the tail lines, within CONTENT_LIMIT."""
    fixed = "\n".join([head, *tail])
    room = CONTENT_LIMIT - len(fixed) - 1

    def render(chars: int) -> str:
        return "\n".join(prefix + _statement(c, chars) for c in statements)

    body = shrink_to_fit(render, room, start=STATEMENT_CHARS) if statements else ""
    text = "\n".join([head, body, *tail]) if body else fixed
    return text if len(text) <= CONTENT_LIMIT else clip(text, CONTENT_LIMIT)


def answer_markdown(answer: Answer) -> str:
    """The answer as one message: the question, the cited statements, the numbered papers, how it was made."""
    since_day = answer.since.date().isoformat() if answer.since else None
    scope = _scope(answer.topic, since_day)
    asked = inert_markdown(clip(clean(answer.question), SHOWN_QUESTION))
    head = f"**Ask** “{asked}”{scope}"
    if not answer.papers:
        return f"{head}\n{NO_PAPERS.format(scope=scope)}"
    if not answer.statements:
        head += "\n" + NO_ANSWER
    note = MODEL_NOTE if answer.by_model else EXTRACTIVE_NOTE
    footer = [f"-# {note}"] + ([f"-# {inert_markdown(clean(answer.note))}"] if answer.note else [])
    sources = ["**Sources**", *_sources(answer.papers)] if answer.statements else _sources(answer.papers)
    return _fit(head, answer.statements, [*sources, *footer])


def answer_text(answer: Answer, width: int = 100) -> str:
    """The answer for a terminal: plain text, control characters removed."""
    lines = [f"Q: {clean(answer.question)}"]
    if answer.topic:
        lines[0] += f"  (in {clean(answer.topic)})"
    if not answer.papers:
        return "\n".join(
            [*lines, "No stored paper is about that. Try other words, a broader topic or since."]
        )
    if not answer.statements:
        lines.append("None of the stored papers answers that directly. The closest:")
    for cited in answer.statements:
        lines.append(
            "  " + readable_text(cited.text, 2 * STATEMENT_CHARS)[:STATEMENT_CHARS] + _cites(cited.sources)
        )
    lines.append("")
    for n, paper in enumerate(answer.papers, start=1):
        lines.append(_paper_text(n, paper, width))
    lines.append("")
    lines.append(MODEL_NOTE if answer.by_model else EXTRACTIVE_NOTE)
    if answer.note:
        lines.append(clean(answer.note))
    return "\n".join(lines)


def _paper_text(n: int, paper: Paper, width: int) -> str:
    title = clip(readable_text(paper.title, 1000), width)
    authors = format_authors(paper.authors, shown=1, limit=60)
    return f"[{n}] {title}\n    {authors} · {paper.published.date().isoformat()} · {paper.abs_url}"


BRIEF_NOTE = "Extractive: counted and quoted from the stored papers' titles and abstracts."
NO_INSTITUTIONS = "none given (arXiv lists affiliations for few papers)"


def _period(brief: Brief) -> str:
    weeks = "week" if brief.weeks == 1 else f"{brief.weeks} weeks"
    return f"last {weeks} ({brief.start.date().isoformat()} to {brief.end.date().isoformat()})"


def _weeks_before(brief: Brief) -> int:
    return round((brief.start - brief.before).days / 7)


def _count(n: int, sampled: bool) -> str:
    return f"{n}+" if sampled else str(n)


def _rising(brief: Brief, quote: str, end: str) -> str:
    return ", ".join(f"{quote}{r.phrase}{end} ({r.now}, was {r.before})" for r in brief.rising)


def _people(pairs: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"{name} ({n})" for name, n in pairs)


def brief_markdown(brief: Brief) -> str:
    """/brief as one message: the model's overview (if any), then the counts, phrases, people and papers."""
    name = safe_name(brief.topic, 100)
    head = (
        f"**Brief: {name}**, {_period(brief)}: {_count(brief.papers_now, brief.sampled)} papers "
        f"({_count(brief.papers_before, brief.sampled)} in the {_weeks_before(brief)} weeks before)"
    )
    if not brief.papers_now:
        return f"{head}\nNo paper of this topic was submitted in that period: try more weeks."
    lines: list[str] = []
    if brief.rising:
        lines.append("**Rising**: " + inert_markdown(clip(_rising(brief, "“", "”"), 600)))
    if brief.authors:
        lines.append("**Most active authors**: " + inert_markdown(clip(_people(brief.authors), 400)))
    institutions = _people(brief.institutions) if brief.institutions else NO_INSTITUTIONS
    lines.append("**Institutions**: " + inert_markdown(clip(institutions, 300)))
    lines.append("**Papers that represent the period**")
    lines += _sources(brief.representative)
    notes = [f"-# {MODEL_NOTE if brief.overview else BRIEF_NOTE}"]
    if brief.note:
        notes.append(f"-# {inert_markdown(clean(brief.note))}")
    return _fit(head, brief.overview, [*lines, *notes], prefix="")


def brief_text(brief: Brief, width: int = 100) -> str:
    """/brief for a terminal."""
    lines = [
        f"{clean(brief.topic)}, {_period(brief)}: {_count(brief.papers_now, brief.sampled)} papers "
        f"({_count(brief.papers_before, brief.sampled)} in the {_weeks_before(brief)} weeks before)"
    ]
    if not brief.papers_now:
        return lines[0] + "\nNo paper of this topic was submitted in that period: try more weeks."
    for cited in brief.overview:
        lines.append(
            "  " + readable_text(cited.text, 2 * STATEMENT_CHARS)[:STATEMENT_CHARS] + _cites(cited.sources)
        )
    lines.append("Rising: " + clean(_rising(brief, '"', '"') or "nothing stands out"))
    lines.append("Most active authors: " + clean(_people(brief.authors)))
    lines.append(
        "Institutions: " + clean(_people(brief.institutions) if brief.institutions else NO_INSTITUTIONS)
    )
    lines.append("Papers that represent the period:")
    lines += [_paper_text(n, p, width) for n, p in enumerate(brief.representative, start=1)]
    if brief.note:
        lines.append(clean(brief.note))
    return "\n".join(lines)


__all__ = ["answer_markdown", "answer_text", "brief_markdown", "brief_text"]

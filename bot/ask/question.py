"""A question as the answerer reads it: checked once, its content words (folded as the full-text index folds
them), and the `since` a user gives (a day, or a span back from now)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from bot.errors import PaperwatchError
from bot.render.text import safe_name
from bot.topics.query import fold_words, porter_stem
from bot.topics.text_weights import ENGLISH_STOP_WORDS

MAX_QUESTION_LENGTH = 300  # characters: a question, not a document
MAX_SINCE_DAYS = 3650

# Words of how a question is asked rather than what it is about.
_QUESTION_WORDS = frozenset(
    [
        "paper",
        "papers",
        "work",
        "works",
        "study",
        "studies",
        "approach",
        "approaches",
        "method",
        "methods",
        "propose",
        "proposed",
        "recent",
        "recently",
        "new",
        "use",
        "used",
        "using",
        "does",
        "did",
        "doing",
        "make",
        "makes",
        "way",
        "ways",
        "people",
        "researchers",
        "tell",
        "know",
        "show",
        "shows",
        "shown",
        "help",
        "helps",
        "good",
        "best",
        "better",
        "main",
    ]
)
STOP_WORDS = frozenset(ENGLISH_STOP_WORDS) | _QUESTION_WORDS


class InvalidQuestion(PaperwatchError):
    pass


class InvalidSince(PaperwatchError):
    pass


def check_question(text: str) -> str:
    """The question with its whitespace collapsed; InvalidQuestion says what to ask instead."""
    question = " ".join(text.split())
    if not question:
        raise InvalidQuestion("Ask a question in words, e.g. “which methods reduce reward hacking in RLHF?”.")
    if len(question) > MAX_QUESTION_LENGTH:
        raise InvalidQuestion(
            f"That question is {len(question):,} characters long; ask it in at most {MAX_QUESTION_LENGTH} "
            "(the answer comes from the papers' abstracts: a few precise words find them best)."
        )
    if not content_words(question):
        raise InvalidQuestion(
            "That question has no word to look for in the papers (only words like “what” or “the”): "
            "name the subject, e.g. “what is new in speculative decoding?”."
        )
    return question


def content_words(text: str) -> list[str]:
    """The words a question is about, folded as the index folds them, in order, each once."""
    words = (w for w in fold_words(text) if len(w) > 1 and w not in STOP_WORDS and not w.isdigit())
    return list(dict.fromkeys(words))


def stems(text: str) -> list[str]:
    """Content words as the index stores them (Porter stems): what sentences are compared by."""
    return [stem(w) for w in fold_words(text) if len(w) > 1 and w not in STOP_WORDS]


def stem(word: str) -> str:
    """A folded word's Porter stem, as the index stores it."""
    return porter_stem(word).decode("utf-8", "replace")


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_SPAN = re.compile(r"(\d{1,4})\s*([dwmy])", re.IGNORECASE)
_SPAN_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
SINCE_HELP = "a day as YYYY-MM-DD (2026-01-31) or a span back from today: 10d, 4w, 6m or 1y"


def parse_since(text: str | None, now: datetime) -> datetime | None:
    """`since` as a moment: a day at midnight UTC, or `now` minus a span; None when not given."""
    if text is None or not text.strip():
        return None
    cleaned = text.strip()
    shown = safe_name(cleaned, 40)  # the user's own text, shown back: inert
    if _DAY.fullmatch(cleaned):
        try:
            day = date.fromisoformat(cleaned)
        except ValueError:
            raise InvalidSince(
                f"“{shown}” is not a day of the calendar. Give since as {SINCE_HELP}."
            ) from None
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    span = _SPAN.fullmatch(cleaned)
    if span is None:
        raise InvalidSince(f"“{shown}” is not a date or a span. Give since as {SINCE_HELP}.")
    days = int(span.group(1)) * _SPAN_DAYS[span.group(2).lower()]
    if not 1 <= days <= MAX_SINCE_DAYS:
        raise InvalidSince(f"since reaches back 1 to {MAX_SINCE_DAYS} days, not {days}. Give {SINCE_HELP}.")
    return now - timedelta(days=days)

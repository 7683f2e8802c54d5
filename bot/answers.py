"""What /ask and /brief answer with: plain records, no I/O, shared by the answerer (bot/ask, bot/services/ask.py)
and the renderer (bot/render/answer.py). Every text here is untrusted (quoted from abstracts or written by a
model): only the renderer makes it fit to show."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from bot.models import Paper


@dataclass(frozen=True)
class Cited:
    """One statement of an answer and the numbers (from 1, into the answer's papers) of the papers it cites."""

    text: str
    sources: tuple[int, ...]


@dataclass(frozen=True)
class Answer:
    question: str
    statements: tuple[Cited, ...]  # empty: the retrieved papers do not answer the question
    papers: tuple[Paper, ...]  # the cited papers, numbered from 1 in this order
    retrieved: int  # papers the answer was drawn from
    topic: str | None = None
    since: datetime | None = None
    by_model: bool = False  # written by the language model (else sentences quoted from the abstracts)
    note: str | None = None  # one line on how it was made, e.g. that the model was unavailable


@dataclass(frozen=True)
class Rising:
    """A phrase of a topic's papers, in how many papers of the period and of the weeks before."""

    phrase: str
    now: int
    before: int


@dataclass(frozen=True)
class Brief:
    topic: str
    weeks: int
    start: datetime  # the period [start, end) and the weeks before it, [before, start)
    end: datetime
    before: datetime
    papers_now: int  # the topic's papers in the period (at most the sample read)
    papers_before: int
    rising: tuple[Rising, ...]
    authors: tuple[tuple[str, int], ...]  # most active first, with their papers in the period
    institutions: tuple[tuple[str, int], ...]  # from the affiliations arXiv gives; often none
    representative: tuple[Paper, ...]
    sampled: bool = False  # a window had more papers than were read (a sample spread over it was)
    overview: tuple[Cited, ...] = field(default=())  # the model's overview, citing `representative`
    note: str | None = None

"""The sentences of the retrieved abstracts that best answer a question: TF-IDF over the candidates' sentences
(words stemmed as the index stems them), each sentence scored by its likeness to the question and its paper's,
then the best few from different papers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bot.ask.question import stems
from bot.models import Paper
from bot.render.text import clip
from bot.topics.text_weights import term_counts, tfidf

MAX_SENTENCES = 4
MIN_CHARS, MAX_CHARS = 40, 600  # shorter says nothing alone; longer is a run-on, cut at a word
ABSTRACT_CHARS = 5000  # read of an abstract (arXiv allows 1,920; a hostile feed may send megabytes)
PAPER_WEIGHT = 0.4  # how much a sentence's paper as a whole counts against the sentence itself
RANK_WEIGHT = 0.1  # and the paper's place in the full-text ranking
KEEP_SHARE = 0.5  # a sentence scoring under half the best one answers less than it adds noise

# A sentence ends at . ! or ? before a space and a capital or a digit, unless the word before is an
# abbreviation ("et al. Smith", "Fig. 3", "e.g. BERT") or one letter (an initial).
_END = re.compile(r"(?<=[.!?])[\"')\]”’]*\s+(?=[\"'(\[“‘]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    ["al", "e.g", "i.e", "cf", "vs", "fig", "figs", "eq", "eqs", "sec", "ref", "refs", "no", "approx", "resp"]
)


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    for m in _END.finditer(text):
        word = text[text.rfind(" ", start, m.start()) + 1 : m.start()].strip(".!?\"'()[]“”‘’").lower()
        if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue
        sentences.append(text[start : m.start()].strip())
        start = m.end()
    sentences.append(text[start:].strip())
    return [" ".join(s.split()) for s in sentences if s.strip()]


@dataclass(frozen=True)
class Picked:
    paper: int  # index into the candidates
    text: str
    score: float


def pick_sentences(
    question: str, papers: Sequence[Paper], *, most: int = MAX_SENTENCES, per_paper: int = 1
) -> list[Picked]:
    """The best sentences for the question, best first, at most `per_paper` from one paper; none that shares
    no word with the question."""
    units: list[tuple[int, str]] = [
        (i, clip(s, MAX_CHARS))
        for i, paper in enumerate(papers)
        for s in split_sentences(paper.abstract[:ABSTRACT_CHARS])
        if len(s) >= MIN_CHARS
    ]
    if not units or not stems(question):
        return []
    documents = [f"{p.title[:ABSTRACT_CHARS]}. {p.abstract[:ABSTRACT_CHARS]}" for p in papers]
    matrix = tfidf(term_counts([question, *documents, *(s for _, s in units)], stems))
    asked = matrix[0]
    paper_scores = (matrix[1 : 1 + len(papers)] @ asked.T).toarray().ravel()
    sentence_scores = (matrix[1 + len(papers) :] @ asked.T).toarray().ravel()
    ranks = np.array([1.0 - i / max(len(papers), 1) for i, _ in units])
    scores = (
        (1 - PAPER_WEIGHT) * sentence_scores
        + PAPER_WEIGHT * paper_scores[[i for i, _ in units]]
        + RANK_WEIGHT * ranks
    )
    picked: list[Picked] = []
    taken: dict[int, int] = {}
    for k in np.argsort(-scores, kind="stable"):
        paper, text = units[k]
        if picked and scores[k] < KEEP_SHARE * picked[0].score:
            break
        if sentence_scores[k] <= 0 or taken.get(paper, 0) >= per_paper:
            continue
        taken[paper] = taken.get(paper, 0) + 1
        picked.append(Picked(paper, text, float(scores[k])))
        if len(picked) == most:
            break
    return picked

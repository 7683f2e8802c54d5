"""What moved in a topic: the phrases rising fastest in a period against the weeks before it (n-gram counts over
the two windows), its most active authors and institutions, and the papers closest to the period's centre."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress

import numpy as np
from scipy.sparse import csr_matrix

from bot.answers import Rising
from bot.ask.question import STOP_WORDS
from bot.models import Paper
from bot.topics.query import fold_words
from bot.topics.text_weights import tfidf

MOST_PHRASES = 8
MOST_AUTHORS = 5
REPRESENTATIVE = 3
AUTHORS_READ = 50  # per paper: a hostile entry may list a million


def _text(paper: Paper) -> str:
    return f"{paper.title}. {paper.abstract}"


_URL = re.compile(r"\S+://\S*|www\.\S+")
_CLAUSE = re.compile(r"[.;:!?,()\[\]{}\"]")
LONGER_BONUS = (
    0.1  # per content word: of two phrases as frequent, the longer says more ("draft tree verification")
)


def phrases(text: str) -> set[str]:
    """The runs of one to three words within a clause, neither starting nor ending with a stop word or a
    number, each once: "reward models" and "learning from human feedback", never "models with" or a phrase
    across a full stop. Only runs that pass are built (this runs over every word of hundreds of abstracts)."""
    found: set[str] = set()
    if "://" in text or "www." in text:
        text = _URL.sub(".", text)  # a link's parts are no phrase
    for clause in _CLAUSE.split(text):
        words = fold_words(clause)
        plain = [len(w) > 1 and not w.isdigit() for w in words]
        edge = [ok and w not in STOP_WORDS for w, ok in zip(words, plain, strict=True)]
        found.update(compress(words, edge))
        found.update(
            f"{a} {b}" for a, b, ea, eb in zip(words, words[1:], edge, edge[1:], strict=False) if ea and eb
        )
        found.update(
            f"{a} {b} {c}"
            for a, b, c, ea, pb, ec in zip(
                words, words[1:], words[2:], edge, plain[1:], edge[2:], strict=False
            )
            if ea and pb and ec
        )
    return found


@dataclass(frozen=True)
class PhraseTable:
    """The phrases held by at least two of the period's papers: which of those papers hold each, and how many
    papers of the period and of the weeks before do."""

    names: list[str]
    matrix: csr_matrix  # binary, the period's papers x names
    in_now: np.ndarray
    in_before: np.ndarray
    papers_now: int
    papers_before: int


def phrase_table(now: Sequence[Paper], before: Sequence[Paper]) -> PhraseTable:
    """Phrases counted once per paper. By hand rather than with CountVectorizer, whose vocabulary of every
    phrase of every paper took three times as long on 800 abstracts (bench/bench_ask.py)."""
    held_now = [phrases(_text(p)) for p in now]
    in_now: Counter[str] = Counter()
    for held in held_now:
        in_now.update(held)
    names = [phrase for phrase, n in in_now.items() if n >= 2]  # one paper is no trend
    column = {phrase: k for k, phrase in enumerate(names)}
    candidates = frozenset(names)
    in_before: Counter[str] = Counter()
    for paper in before:  # only the candidates are counted: the rest of the earlier phrases cannot rise
        in_before.update(phrases(_text(paper)) & candidates)
    rows: list[int] = []
    cols: list[int] = []
    for row, held in enumerate(held_now):
        kept = [column[phrase] for phrase in held & candidates]
        rows += [row] * len(kept)
        cols += kept
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(now), len(names)))
    return PhraseTable(
        names,
        matrix,
        np.array([in_now[n] for n in names], dtype=float),
        np.array([in_before[n] for n in names], dtype=float),
        len(now),
        len(before),
    )


def rising_phrases(table: PhraseTable, most: int = MOST_PHRASES) -> list[Rising]:
    """Phrases held by more of the period's papers than of the earlier ones, by how much more (smoothed, so a
    phrase new in two papers does not outrank one that tripled in twenty)."""
    if not table.names:
        return []
    share_now = (table.in_now + 0.5) / (table.papers_now + 1)
    share_before = (table.in_before + 0.5) / (table.papers_before + 1)
    lengths = np.array([sum(w not in STOP_WORDS for w in name.split()) - 1 for name in table.names])
    score = np.log(share_now / share_before) * np.sqrt(table.in_now) * (1 + LONGER_BONUS * lengths)
    chosen: list[Rising] = []
    for k in np.argsort(-score, kind="stable"):
        if score[k] <= 0:
            break
        phrase = table.names[k]
        if any(_overlaps(phrase, r.phrase) for r in chosen):
            continue
        chosen.append(Rising(phrase, int(table.in_now[k]), int(table.in_before[k])))
        if len(chosen) == most:
            break
    return chosen


def _overlaps(a: str, b: str) -> bool:
    """One phrase inside the other, word for word: "policy optimization" says nothing new after "group
    relative policy optimization"."""
    x, y = f" {a} ", f" {b} "
    return x in y or y in x


def active_authors(papers: Sequence[Paper], most: int = MOST_AUTHORS) -> list[tuple[str, int]]:
    counts = Counter(
        " ".join(a.name.split())
        for p in papers
        for a in dict.fromkeys(p.authors[:AUTHORS_READ])
        if a.name.strip()
    )
    return [(name, n) for name, n in counts.most_common(most) if n >= 2] or counts.most_common(min(most, 3))


def active_institutions(papers: Sequence[Paper], most: int = MOST_AUTHORS) -> list[tuple[str, int]]:
    """Affiliations as arXiv gives them (often none), each counted once per paper."""
    counts: Counter[str] = Counter()
    for paper in papers:
        counts.update(
            {
                " ".join(aff.split())
                for a in paper.authors[:AUTHORS_READ]
                for aff in a.affiliations
                if aff.strip()
            }
        )
    return counts.most_common(most)


def representative(papers: Sequence[Paper], table: PhraseTable, most: int = REPRESENTATIVE) -> list[Paper]:
    """The period's papers closest to its centre (the mean of their TF-IDF vectors over the phrase table):
    what it was mostly about."""
    if len(papers) <= most or not table.names:
        return list(papers[:most])
    weighted = tfidf(table.matrix)
    centre = np.asarray(weighted.mean(axis=0)).ravel()
    closeness = weighted @ centre / max(math.sqrt(float(centre @ centre)), 1e-12)
    return [papers[k] for k in np.argsort(-closeness, kind="stable")[:most]]

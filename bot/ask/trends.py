"""What moved in a topic: the phrases rising fastest in a period against the weeks before it (n-gram counts over
the two windows), its most active authors and institutions, and the papers closest to the period's centre."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from bot.answers import Rising
from bot.ask.question import STOP_WORDS, stems
from bot.models import Paper
from bot.topics.query import fold_words

MOST_PHRASES = 8
MOST_AUTHORS = 5
REPRESENTATIVE = 3
AUTHORS_READ = 50  # per paper: a hostile entry may list a million


def _text(paper: Paper) -> str:
    return f"{paper.title}. {paper.abstract}"


_URL = re.compile(r"\S+://\S*|www\.\S+")
_CLAUSE = re.compile(r"[.;:!?,()\[\]{}\"]")
LONGER_BONUS = 0.1  # of two phrases as frequent, the longer says more ("draft tree verification")


def phrases(text: str) -> Iterator[str]:
    """Runs of one to three words within a clause, neither starting nor ending with a stop word or a number:
    "reward models" and "learning from human feedback", never "models with" or a phrase across a full stop."""
    for clause in _CLAUSE.split(_URL.sub(".", text)):  # a link's parts are no phrase
        words = fold_words(clause)
        plain = [len(w) > 1 and not w.isdigit() for w in words]
        for n in (1, 2, 3):
            for i in range(len(words) - n + 1):
                gram = words[i : i + n]
                if gram[0] in STOP_WORDS or gram[-1] in STOP_WORDS or not all(plain[i : i + n]):
                    continue
                yield " ".join(gram)


def rising_phrases(now: Sequence[Paper], before: Sequence[Paper], most: int = MOST_PHRASES) -> list[Rising]:
    """Phrases of one to three words held by more of the period's papers than of the earlier ones, by how
    much more (smoothed, so a phrase new in two papers does not outrank one that tripled in twenty)."""
    if len(now) < 2:
        return []
    vectorizer = CountVectorizer(analyzer=phrases, binary=True, min_df=2)
    try:
        counts = vectorizer.fit_transform([_text(p) for p in [*now, *before]])
    except ValueError:  # no phrase in two papers
        return []
    in_now = np.asarray(counts[: len(now)].sum(axis=0)).ravel()
    in_before = np.asarray(counts[len(now) :].sum(axis=0)).ravel()
    share_now = (in_now + 0.5) / (len(now) + 1)
    share_before = (in_before + 0.5) / (len(before) + 1)
    names = vectorizer.get_feature_names_out()
    lengths = np.array([name.count(" ") for name in names])
    score = np.log(share_now / share_before) * np.sqrt(in_now) * (1 + LONGER_BONUS * lengths)
    chosen: list[Rising] = []
    for k in np.argsort(-score, kind="stable"):
        if score[k] <= 0 or in_now[k] < 2:
            break
        phrase = str(names[k])
        if any(_overlaps(phrase, r.phrase) for r in chosen):
            continue
        chosen.append(Rising(phrase, int(in_now[k]), int(in_before[k])))
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


def representative(papers: Sequence[Paper], most: int = REPRESENTATIVE) -> list[Paper]:
    """The papers closest to the period's centre (the mean of their TF-IDF vectors): what it was mostly about."""
    if len(papers) <= most:
        return list(papers)
    try:
        matrix = TfidfVectorizer(analyzer=stems, sublinear_tf=True).fit_transform([_text(p) for p in papers])
    except ValueError:  # no words at all
        return list(papers[:most])
    centre = np.asarray(matrix.mean(axis=0)).ravel()
    closeness = matrix @ centre / max(math.sqrt(float(centre @ centre)), 1e-12)
    return [papers[k] for k in np.argsort(-closeness, kind="stable")[:most]]

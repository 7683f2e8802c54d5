"""Papers near a paper, by the learned scorer's features (hashed TF-IDF rows, bot/topics/scorer.py).

Comparing one row with a million is too slow for a click, and the hashed columns cannot be turned back into
words. So the search is in two steps: the paper's most telling words (highest TF-IDF under the scorer's
IDF) ask the full-text index for a bounded set of candidates sharing them, and those candidates are ranked by
the cosine of their feature rows with the paper's. CPU-bound: call these in a worker thread."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from bot.models import Paper
from bot.topics.scorer import Featurizer, paper_text
from bot.topics.text_weights import ENGLISH_STOP_WORDS

_WORD = re.compile(r"[^\W\d_][\w-]{2,39}")  # a word of letters (digits and hyphens inside), 3-40 long


MAX_SHARE = 0.005  # a word in more of the papers than this finds too many candidates to rank quickly


def telling_words(featurizer: Featurizer, paper: Paper, count: int = 8) -> list[str]:
    """The paper's `count` heaviest words (sublinear tf x the scorer's IDF), heaviest first, leaving out words
    the IDF says are in more than MAX_SHARE of the papers (unless no other word is left): what the full-text
    index must rank stays bounded at any history size."""
    tf = Counter(
        w.lower()
        for w in _WORD.findall(paper_text(paper.title, paper.abstract))
        if w.lower() not in ENGLISH_STOP_WORDS
    )
    if not tf:
        return []
    words = sorted(tf)
    rows = featurizer.transform(words)  # one row per word: its own hashed column
    weights = []
    for i, word in enumerate(words):
        start, end = rows.indptr[i], rows.indptr[i + 1]
        column = rows.indices[start:end]
        idf = float(featurizer.idf[column].max()) if len(column) else 0.0
        weights.append((-(1 + np.log(tf[word])) * idf, idf, word))
    # idf = ln((1 + n) / (1 + df)) + 1 (bot.topics.scorer.Featurizer.fit): the share df / n it stands for
    documents = max(featurizer.documents, 1)
    rare = [w for w in sorted(weights) if ((1 + documents) / np.exp(w[1] - 1) - 1) / documents <= MAX_SHARE]
    return [word for _, _, word in (rare or sorted(weights))[:count]]


def nearest(
    featurizer: Featurizer, paper: Paper, candidates: Sequence[Paper], count: int = 5
) -> list[tuple[Paper, float]]:
    """The `count` candidates whose feature rows are closest to the paper's (cosine, best first); ties keep
    the candidates' order."""
    if not candidates:
        return []
    rows = featurizer.transform([paper_text(p.title, p.abstract) for p in [paper, *candidates]])
    scores = (rows[1:] @ rows[0].T).toarray().ravel()
    order = np.argsort(-scores, kind="stable")[:count]
    return [(candidates[int(i)], float(scores[int(i)])) for i in order if scores[int(i)] > 0]

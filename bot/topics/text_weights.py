"""Word features with NumPy and SciPy alone, computed exactly as scikit-learn computes them.

The bot's own process scores new papers, compares a clicked paper with its neighbours and ranks /ask's
sentences, but imports scikit-learn nowhere (it takes ~100 MiB, and the bot's memory budget is 250 MiB): only
the scorer's training process does (bot/topics/scorer_jobs.py). These reproduce the pieces it used, so a row
computed here equals the row scikit-learn computes (tests/topics/test_text_weights.py compares them):

- `hashed_counts`: HashingVectorizer(ngram_range=(1, 2), stop_words="english", alternate_sign=False,
  norm=None): lower-cased words of two or more word characters, English stop words dropped, unigrams and
  bigrams, each hashed by MurmurHash3 (x86, 32-bit, seed 0, as scikit-learn's; the `mmh3` package) into one of
  `n_features` columns;
- `term_counts` and `tfidf`: CountVectorizer(analyzer=...) and TfidfTransformer(sublinear_tf=True): smoothed IDF,
  1 + log(tf), rows L2-normalised.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise

import mmh3
import numpy as np
import scipy.sparse as sp

# scikit-learn's ENGLISH_STOP_WORDS (BSD-3-Clause; from the Glasgow Information Retrieval Group's list).
_STOP_WORDS = """
a about above across after afterwards again against all almost alone along already also although always am
among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere are around as at
back be became because become becomes becoming been before beforehand behind being below beside besides
between beyond bill both bottom but by call can cannot cant co con could couldnt cry de describe detail do
done down due during each eg eight either eleven else elsewhere empty enough etc even ever every everyone
everything everywhere except few fifteen fifty fill find fire first five for former formerly forty found
four from front full further get give go had has hasnt have he hence her here hereafter hereby herein
hereupon hers herself him himself his how however hundred i ie if in inc indeed interest into is it its
itself keep last latter latterly least less ltd made many may me meanwhile might mill mine more moreover
most mostly move much must my myself name namely neither never nevertheless next nine no nobody none noone
nor not nothing now nowhere of off often on once one only onto or other others otherwise our ours ourselves
out over own part per perhaps please put rather re same see seem seemed seeming seems serious several she
should show side since sincere six sixty so some somehow someone something sometime sometimes somewhere
still such system take ten than that the their them themselves then thence there thereafter thereby
therefore therein thereupon these they thick thin third this those though three through throughout thru thus
to together too top toward towards twelve twenty two un under until up upon us very via was we well were
what whatever when whence whenever where whereafter whereas whereby wherein whereupon wherever whether which
while whither who whoever whole whom whose why will with within without would yet you your yours yourself
yourselves
"""
ENGLISH_STOP_WORDS = frozenset(_STOP_WORDS.split())

_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def words_and_pairs(text: str) -> list[str]:
    """The terms scikit-learn's word analyzer gives for ngram_range=(1, 2) with English stop words: the words,
    then each pair of neighbouring words (neighbours once the stop words are gone)."""
    words = [w for w in _TOKEN.findall(text.lower()) if w not in ENGLISH_STOP_WORDS]
    return words + [f"{a} {b}" for a, b in pairwise(words)]


def hashed_counts(texts: Iterable[str], n_features: int) -> sp.csr_matrix:
    """One row of term counts per text (float32), each term in column |murmurhash3(term)| mod n_features."""
    indptr = [0]
    parts: list[np.ndarray] = []  # a text's hashes as int64 (a list of Python ints took 5x the memory)
    for text in texts:
        terms = words_and_pairs(text)
        parts.append(np.fromiter(map(mmh3.hash, terms), dtype=np.int64, count=len(terms)))
        indptr.append(indptr[-1] + len(terms))
    signed = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    columns = (np.abs(signed) % n_features).astype(
        np.int32
    )  # int64: |-2**31| stays exact, as in scikit-learn
    counts = sp.csr_matrix(
        (np.ones(len(columns), dtype=np.float32), columns, np.array(indptr, dtype=np.int64)),
        shape=(len(indptr) - 1, n_features),
    )
    counts.sum_duplicates()
    return counts


def term_counts(documents: Sequence[str], analyzer: Callable[[str], Iterable[str]]) -> sp.csr_matrix:
    """One row of term counts (float64) per document over the terms the analyzer gives, a column per term."""
    vocabulary: dict[str, int] = {}
    columns: list[int] = []
    indptr = [0]
    for document in documents:
        columns.extend(vocabulary.setdefault(term, len(vocabulary)) for term in analyzer(document))
        indptr.append(len(columns))
    counts = sp.csr_matrix(
        (np.ones(len(columns)), np.array(columns, dtype=np.int64), np.array(indptr, dtype=np.int64)),
        shape=(len(documents), len(vocabulary)),
    )
    counts.sum_duplicates()
    return counts


def tfidf(counts: sp.csr_matrix) -> sp.csr_matrix:
    """TfidfTransformer(sublinear_tf=True) fitted on these rows: 1 + log(tf) times the smoothed IDF
    ln((1 + n) / (1 + df)) + 1, each row L2-normalised."""
    weighted = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    weighted.data = np.log(weighted.data) + 1
    df = np.bincount(weighted.indices, minlength=weighted.shape[1])
    idf = np.log((1 + weighted.shape[0]) / (1 + df)) + 1
    weighted.data *= idf[weighted.indices]
    return l2_rows(weighted)


def l2_rows(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """Each row divided by its Euclidean length (empty rows stay empty)."""
    squares = np.add.reduceat(matrix.data**2, matrix.indptr[:-1]) if matrix.nnz else np.zeros(0)
    lengths = np.zeros(matrix.shape[0], dtype=matrix.dtype)
    full = np.diff(matrix.indptr) > 0
    lengths[full] = np.sqrt(squares[full])
    result = matrix.copy()
    result.data /= np.repeat(np.where(lengths > 0, lengths, 1), np.diff(matrix.indptr)).astype(matrix.dtype)
    return result

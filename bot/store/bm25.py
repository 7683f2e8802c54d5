"""bm25's order of one phrase's candidates computed from FTS5's own per-row data, without bm25()'s count of
the papers holding the phrase (which reads every entry of it in the index: 33 ms for a word in nearly every one
of a million papers). One phrase has one idf, a factor common to every paper, so the order needs only each
paper's weighted hits, its length in tokens and the index's average length, all of which FTS5 keeps per row or
per index (the docsize and averages records, read here)."""

from __future__ import annotations

from collections.abc import Sequence

# bm25 weights per column (title, abstract, authors): a hit in the title says most about a paper. Whole numbers:
# so a paper's weighted hits are one too (`hits_from_scores` rounds them exactly).
WEIGHTS = (4.0, 1.0, 2.0)
K1, B = 1.2, 0.75  # FTS5's bm25 constants (fts5_aux.c)


def bm25_order(scored: Sequence[tuple[int, float, float]], average: float) -> list[int]:
    """Row ids best first by bm25 of one phrase, from each row's (id, weighted hits, length in tokens) and the
    index's average length: fts5_aux.c's expression term for term, the idf left out (the same factor for every
    row), ties by row id as the search's ORDER BY score, pk."""
    ranked = sorted(
        (-(hits * (K1 + 1.0)) / (hits + length_factor(length, average)), pk) for pk, hits, length in scored
    )
    return [pk for _, pk in ranked]


def length_factor(length: float, average: float) -> float:
    """bm25's k1 * (1 - b + b * D / avgdl), evaluated as fts5_aux.c does."""
    return K1 * (1 - B + B * length / average)


def hits_from_scores(once: float, doubled: float, factor: float) -> float | None:
    """A row's weighted hits f from its bm25 scores with the weights, idf * f(k1+1) / (f+K), and with them
    doubled, idf * 2f(k1+1) / (2f+K) (K: `length_factor` in the index that scored it): their ratio
    r = 2(f+K) / (2f+K) holds neither the idf nor the count of papers it comes from, so f = K(2-r) / 2(r-1),
    exactly once rounded (WEIGHTS are whole numbers). None when the scores say nothing (no hit)."""
    if once == 0.0:
        return None
    ratio = doubled / once
    if not 1.0 < ratio < 2.0:
        return None
    return float(round(factor * (2.0 - ratio) / (2.0 * (ratio - 1.0))))


def average_length(averages: bytes) -> float:
    """The average length in tokens of an FTS5 index's rows (its averages record: the row count, then each
    column's tokens), as bm25 reads it."""
    papers, *tokens = varints(averages)
    return sum(tokens) / papers if papers else 1.0


def varint_sum(blob: bytes) -> int:
    """The sum of a record of SQLite varints below 2**56 (a docsize record: each column's tokens)."""
    total = value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            total, value = total + value, 0
    return total


def varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, one after another (how FTS5 writes its size records)."""
    values, i = [], 0
    while i < len(blob):
        value = 0
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values

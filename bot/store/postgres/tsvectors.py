"""A page of papers' `words` tsvectors in PostgreSQL's binary form, built with NumPy in a few passes per page.

Built one paper at a time in Python (a dict of positions per lexeme, then each lexeme packed), a tsvector cost
~100 µs of CPU per paper, the largest part of an ingest. Here every word of the page is one number,
`paper << 34 | lexeme << 14 | position`; one sort groups each paper's positions by lexeme (in order), and the
bytes of every tsvector are written by array indexing. Only papers inside PostgreSQL's bounds are built so (see
tokens.py: under 16,383 words, no lexeme over 2,047 bytes or repeated over 255 times); the caller builds the
others one by one, bounds applied (tokens.py `bounded_tsvector`).

Layout (PostgreSQL's tsvectorrecv): int32 lexeme count, then per lexeme its bytes, a zero byte, uint16 count of
positions, and each position as uint16 `weight << 14 | position`, all big-endian, positions ascending. Lexemes
come in lexicon order, not sorted: PostgreSQL sorts them on receipt, as it did for the code before this.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]

LEXEME_BITS = 20  # lexeme ids below 2**20: the lexicon is bounded (tokens.py)
POSITION_BITS = 14  # positions below 16,383 (PostgreSQL's bound; larger papers are built by the caller)
MAX_POSITION = (1 << POSITION_BITS) - 1
MAX_LEXEME = 2_047  # bytes: PostgreSQL does not index a longer word
MAX_POSITIONS = 255  # kept per lexeme by to_tsvector
_A, _B, _C = 3, 2, 1  # the weights of title, abstract and authors


class Lexicon:
    """Each lexeme's encoded bytes, one after another in one array (`data`), found by `start` and `length`."""

    def __init__(self) -> None:
        self.count = 0
        self.data = np.zeros(1 << 16, np.uint8)
        self.start = np.zeros(1 << 12, np.int64)
        self.length = np.zeros(1 << 12, np.int64)
        self._used = 0

    def add(self, lexemes: Sequence[bytes]) -> None:
        """Append lexemes, numbered from `count` on in this order."""
        blob = b"".join(lexemes)
        need = self._used + len(blob)
        if need > len(self.data):
            self.data = np.resize(self.data, max(need, 2 * len(self.data)))
        if self.count + len(lexemes) > len(self.start):
            size = max(self.count + len(lexemes), 2 * len(self.start))
            self.start, self.length = np.resize(self.start, size), np.resize(self.length, size)
        self.data[self._used : need] = np.frombuffer(blob, np.uint8)
        lengths = np.fromiter(map(len, lexemes), np.int64, len(lexemes))
        end = self.count + len(lexemes)
        self.length[self.count : end] = lengths
        self.start[self.count : end] = self._used + np.cumsum(lengths) - lengths
        self.count, self._used = end, need


def build(
    lexicon: Lexicon, ids: Ints, title: Ints, abstract: Ints, authors: Ints
) -> tuple[bytes, Ints, set[int]]:
    """The tsvectors of papers whose words are `ids` (lexicon ids), paper after paper, each paper's title,
    abstract and authors words in turn (`title[i]`, `abstract[i]`, `authors[i]` of them for paper i), all
    inside PostgreSQL's bounds on positions. Returns every tsvector's bytes one after another, and where each
    paper's starts in them (one more entry: the end), and the papers holding a lexeme too long or too often
    repeated to be indexed as it is: built anyway, for the caller to replace."""
    papers = len(title)
    words = title + abstract + authors
    first = np.cumsum(words) - words  # each paper's first word in `ids`
    paper = np.repeat(np.arange(papers, dtype=np.int64), words)
    position = np.arange(len(ids), dtype=np.int64) - first[paper] + 1  # positions run on across the columns
    keys = np.sort(paper << (LEXEME_BITS + POSITION_BITS) | ids << POSITION_BITS | position)

    position = keys & MAX_POSITION
    entry = keys >> POSITION_BITS  # (paper, lexeme)
    starts = np.flatnonzero(np.diff(entry, prepend=-1))  # each lexeme's first position
    counts = np.diff(starts, append=len(keys))
    lexeme = entry[starts] & ((1 << LEXEME_BITS) - 1)
    owner = entry[starts] >> LEXEME_BITS
    paper = keys >> (LEXEME_BITS + POSITION_BITS)
    weight = np.where(position <= title[paper], _A, np.where(position <= (title + abstract)[paper], _B, _C))

    length = lexicon.length[lexeme]
    outside = set(np.unique(owner[(length > MAX_LEXEME) | (counts > MAX_POSITIONS)]).tolist())
    size = length + 3 + 2 * counts  # bytes, zero, count of positions, positions
    before = np.cumsum(size) - size
    at = before + 4 * (owner + 1)  # each paper's header (4 bytes) precedes its lexemes
    lexemes_of = np.bincount(owner, minlength=papers)
    paper_size = np.bincount(owner, weights=size, minlength=papers).astype(np.int64) + 4
    paper_at = np.concatenate(([0], np.cumsum(paper_size)))

    out = np.zeros(paper_at[-1], np.uint8)
    for i, shift in enumerate((24, 16, 8, 0)):
        out[paper_at[:-1] + i] = lexemes_of >> shift & 0xFF
    within = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
    out[np.repeat(at, length) + within] = lexicon.data[np.repeat(lexicon.start[lexeme], length) + within]
    count_at = at + length + 1  # after the zero byte, left as it is
    out[count_at], out[count_at + 1] = counts >> 8, counts & 0xFF
    value = weight << POSITION_BITS | position
    slot = np.repeat(count_at + 2, counts) + 2 * (np.arange(len(keys)) - np.repeat(starts, counts))
    out[slot], out[slot + 1] = value >> 8, value & 0xFF
    return out.tobytes(), paper_at, outside

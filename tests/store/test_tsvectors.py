"""The PostgreSQL store's tsvectors built a page at once (bot/store/postgres/tsvectors.py) equal the ones built a
paper at a time in Python (tokens.py `bounded_tsvector`, itself compared with PostgreSQL's own parser in
test_postgres_ingest.py), whatever the page mixes: papers past PostgreSQL's bounds, empty columns, any text."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.store.postgres import tokens
from bot.store.postgres.tokens import Fields, bounded_tsvector, index_words, tsvectors

Lexemes = list[tuple[bytes, tuple[int, ...]]]


def lexemes(tsvector: bytes) -> Lexemes:
    """A binary tsvector's lexemes with their positions, sorted as PostgreSQL stores them (it sorts on receipt)."""
    (count,) = struct.unpack_from("!i", tsvector)
    at, out = 4, []
    for _ in range(count):
        end = tsvector.index(b"\0", at)
        (n,) = struct.unpack_from("!H", tsvector, end + 1)
        out.append((tsvector[at:end], struct.unpack_from(f"!{n}H", tsvector, end + 3)))
        at = end + 3 + 2 * n
    assert at == len(tsvector)
    return sorted(out)


def one_by_one(page: list[Fields]) -> list[Lexemes]:
    return [lexemes(bounded_tsvector(words)) for words in index_words(page)]


EDGES: list[Fields] = [
    ("", "", ""),
    ("Title only", "", ""),
    ("", "", "Ada Lovelace, Alan Turing"),
    ("Ünïcode façade ß ﬁ naïve 漢字", "Schrödinger’s café, Ångström. 91e607f x2a", "José García"),
    ("repeated", "learning " * 300, "Learning Learner"),  # > 255 positions of one lexeme
    ("many words", " ".join(f"w{i}" for i in range(17_000)), "A B"),  # positions past 16,383
    ("a" * 2_100 + " short", "é" * 1_100 + " tail", ""),  # words too long to index
    ("model models modeling", "the model of models", "Model"),
]


def test_a_page_mixing_every_edge_equals_paper_by_paper() -> None:
    page = [*EDGES, *reversed(EDGES)]
    assert [lexemes(t) for t in tsvectors(page)] == one_by_one(page)
    assert tsvectors([]) == []


_text = st.lists(
    st.one_of(
        st.sampled_from(
            ["model", "models", "Straße", "naïve", "x²", "bus", "buses", "91e607f", "ﬁne", "-", ","]
        ),
        st.text(max_size=12),
    ),
    max_size=40,
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_text, _text, _text), max_size=6))
def test_any_page_equals_paper_by_paper(page: list[Fields]) -> None:
    assert [lexemes(t) for t in tsvectors(page)] == one_by_one(page)


def test_a_page_past_the_lexicons_bound_starts_a_new_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stems of words seen are kept up to a bound, then forgotten wholesale; a page holding more words than
    the bound is built in parts. Either way every tsvector stays the same."""
    monkeypatch.setattr(tokens, "_KEPT", 40)
    monkeypatch.setattr(tokens, "_stems", tokens._Stems())
    page = [(f"title {i}", " ".join(f"word{i}x{j}" for j in range(15)), "Ada Lovelace") for i in range(8)]
    expected = one_by_one(page)
    assert [lexemes(t) for t in tsvectors(page)] == expected
    assert len(tokens._stems.ids) <= 40
    assert [lexemes(t) for t in tsvectors(page[:2])] == expected[:2]

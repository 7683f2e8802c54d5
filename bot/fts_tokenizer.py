"""How the store's full-text index splits text into tokens, named once for everything that must agree with it.

Pure rules, below both the store and the query language (bot/topics/query/), so that neither imports the other:
the tokenizers' names, and `fold_words`, the Python twin of FOLDING_TOKENIZER that both split text with.

`papers_fts` (migration 0001) indexes title, abstract and authors with PAPERS_TOKENIZER. Topic queries fold
words locally exactly as FOLDING_TOKENIZER does (the same tokenizer without the Porter stemmer) and reason
about the stems, so that their FTS5 prefilter never drops a paper their evaluator would match. A migration
cannot import Python: a test checks that the migrated table still uses PAPERS_TOKENIZER.
"""

from __future__ import annotations

import re
import sqlite3
import threading

FOLDING_TOKENIZER = "unicode61 remove_diacritics 2"
"""Lower-cases, drops diacritics (incl. combining marks) and splits on anything not a letter or digit."""

PAPERS_TOKENIZER = f"porter {FOLDING_TOKENIZER}"
"""The tokenizer of papers_fts: FOLDING_TOKENIZER's words, then Porter stemmed."""


# Text into words exactly as FOLDING_TOKENIZER splits and folds it (before Porter stemming). Local matching and
# the FTS5 prefilter must see the same words, or the prefilter drops true matches. Rather than guess (a Python
# NFKD fold would also fold ß, ligatures and superscripts, which unicode61 keeps), SQLite itself is asked how
# FOLDING_TOKENIZER treats each non-ASCII character, once per character and process.
_DIACRITIC = "\x01"  # marks a combining mark: dropped inside a word, a separator elsewhere (as in unicode61)
_DIACRITIC_IN_WORD = re.compile(r"(?<=[^\s\x01])\x01+")
_FOLD: dict[int, str] = {c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128)}
_KNOWN: set[str] = {chr(c) for c in range(128)}
_FOLD_LOCK = threading.Lock()
# ASCII text's fold as a byte table (letters lowered, digits kept, all else a space): translating and splitting
# the bytes is a third faster than a regex over the lowered text, and this runs on every word stored.
_ASCII_FOLD = bytes(
    c | 0x20 if chr(c).isalpha() else c if chr(c).isdigit() else 32 for c in range(128)
) + bytes([32] * 128)


def fold_words(text: str) -> list[str]:
    """Split text into lower-case, accent-free words, exactly as FTS5's FOLDING_TOKENIZER does."""
    if text.isascii():
        return text.encode().translate(_ASCII_FOLD).decode().split()  # the same as the table below, in C
    unknown = set(text) - _KNOWN
    if unknown:
        _learn_chars(unknown)
    folded = text.translate(_FOLD)
    if _DIACRITIC in folded:
        folded = _DIACRITIC_IN_WORD.sub("", folded).replace(_DIACRITIC, " ")
    return folded.split()


def _learn_chars(chars: set[str]) -> None:
    """Ask SQLite how unicode61 treats each character, once per character and process."""
    with _FOLD_LOCK:
        todo = sorted(c for c in chars if c not in _KNOWN)
        probe = [c for c in todo if _encodable(c)]
        learned = _probe_sqlite(probe) if probe else {}
        for c in todo:
            _FOLD[ord(c)] = learned.get(c, " ")
            _KNOWN.add(c)


def _encodable(c: str) -> bool:
    try:
        c.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: SQLite cannot even receive them
        return False
    return True


def _probe_sqlite(chars: list[str]) -> dict[str, str]:
    """Tokenize "a<c>b" for each character: one token "a?b" gives the fold, "ab" a dropped mark, else a gap."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE p USING fts5(x, tokenize='{FOLDING_TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE pv USING fts5vocab(p, 'instance')")
        db.executemany("INSERT INTO p(rowid, x) VALUES (?, ?)", [(i, f"a{c}b") for i, c in enumerate(chars)])
        terms: dict[int, list[str]] = {}
        for doc, term in db.execute("SELECT doc, term FROM pv ORDER BY doc, offset"):
            terms.setdefault(doc, []).append(term)
    finally:
        db.close()
    learned: dict[str, str] = {}
    for i, c in enumerate(chars):
        found = terms.get(i, [])
        if len(found) == 1 and found[0] == "ab":
            learned[c] = _DIACRITIC
        elif len(found) == 1 and len(found[0]) == 3:
            learned[c] = found[0][1]
        else:
            learned[c] = " "
    return learned

"""Topic queries in arXiv's search syntax: parsed once, then evaluated locally, sent to FTS5 and to arXiv.

One query string has three readers, and they must agree:

* ``matches(paper)`` decides locally whether a new paper belongs to the topic;
* ``to_fts5()`` turns it into a MATCH expression that prefilters stored history, which ``matches`` then
  confirms, so it may return too much but must never drop a true match;
* ``to_arxiv()`` sends the same query to the arXiv API for backfill.

Word matching rules:

* case- and accent-insensitive, on whole words; ``-`` and spaces are interchangeable ("post-training" is the
  phrase "post training"), but a closed compound ("posttraining") is a different word, exactly as the FTS
  index sees it;
* plural tolerant: ``model``/``models``, ``policy``/``policies``, ``box``/``boxes``, ``GPU``/``GPUs``;
* a bare term means ``all:``: title, abstract or an author's name (a phrase stays within one of them);
* a trailing ``*`` is a prefix of one word (``diffus*``, ``post-train*``), inside quotes it is literal;
  ``cat:cs.*`` is a category prefix, ``id:2401.*`` an id prefix; ``id:`` ignores versions;
* ``au:`` words match within one author name, in any order, exactly (no plurals), with single letters as
  initials: ``au:"Geoffrey Hinton"``, ``au:Hinton_G`` and ``au:hinton`` all match "Geoffrey E. Hinton";
* ``NOT``/``ANDNOT`` subtract from a positive part joined by AND (``a NOT b`` = ``a ANDNOT b``); a query
  that is only a negation, or ``a OR NOT b``, is rejected: arXiv cannot run it and it would match nearly all.

Words are folded exactly as the store's FTS5 tokenizer (``unicode61 remove_diacritics 2``) folds them:
SQLite itself is asked how it folds each non-ASCII character, once per character. A Python NFKD fold would
also fold ß, ligatures and superscripts, which FTS5 keeps, and the prefilter would then drop true matches.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import chain, product
from typing import TYPE_CHECKING, ClassVar

from luqum import tree as lq
from luqum.exceptions import IllegalCharacterError
from luqum.parser import lexer as _luqum_lexer
from luqum.parser import parser as _luqum_parser

from bot.errors import PaperwatchError
from bot.models import Paper, split_arxiv_id

if TYPE_CHECKING:
    from ply.lex import LexToken  # luqum's lexer tokens

MAX_QUERY_LENGTH = 500

FIELDS = ("ti", "abs", "au", "co", "jr", "cat", "id", "all")
_FIELD_LIST = ", ".join(f"{name}:" for name in FIELDS)
_TERM_EXPECTED = "a term, a phrase or '('"


class QuerySyntaxError(PaperwatchError):
    """A topic query that cannot be parsed; `position` is a 0-based offset into `text`."""

    def __init__(self, text: str, position: int, expected: str) -> None:
        self.text = text
        self.position = max(0, min(position, len(text)))
        self.expected = expected
        super().__init__(f"position {self.position}: expected {expected}")

    def pointer(self) -> str:
        """The query on one line and a caret under the error position."""
        line = re.sub(r"\s", " ", self.text)
        return f"{line}\n{' ' * self.position}^"


# --------------------------------------------------------------------------------------------------------
# Folding text into words, the way the store's FTS5 tokenizer does
# --------------------------------------------------------------------------------------------------------

_DIACRITIC = "\x01"  # marks a combining mark: dropped inside a word, a separator elsewhere (as in unicode61)
_DIACRITIC_IN_WORD = re.compile(r"(?<=[^\s\x01])\x01+")
_FOLD: dict[int, str] = {c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128)}
_KNOWN: set[str] = {chr(c) for c in range(128)}
_FOLD_LOCK = threading.Lock()


def fold_words(text: str) -> list[str]:
    """Split text into lower-case, accent-free words, exactly as FTS5 unicode61 remove_diacritics 2 does."""
    if not text.isascii():
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
        db.execute("CREATE VIRTUAL TABLE p USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
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


# --------------------------------------------------------------------------------------------------------
# Plural tolerance: two words match when they share a singular form
# --------------------------------------------------------------------------------------------------------

_ES_STEMS = ("s", "x", "z", "ch", "sh")


@lru_cache(maxsize=200_000)
def word_forms(word: str) -> frozenset[str]:
    """The word and the singulars it may be the plural of. Words match when their forms intersect.

    "models" -> {models, model}; "policies" -> {policies, policie, policy}; "boxes" -> {boxes, boxe, box}.
    A set rather than one canonical key, so that "causes"~"cause" and "buses"~"bus" both hold.
    """
    forms = {word}
    n = len(word)
    if n >= 3 and word.endswith("s") and not word.endswith("ss"):
        forms.add(word[:-1])
        if n >= 5 and word.endswith("ies"):
            forms.add(word[:-3] + "y")
        if n >= 5 and word.endswith("es") and word[:-2].endswith(_ES_STEMS):
            forms.add(word[:-2])
    return frozenset(forms)


def _all_forms(words: Iterable[str]) -> frozenset[str]:
    """The union of `word_forms` over words, fast: only words ending in "s" have forms besides themselves."""
    unique = frozenset(words)
    plural_like = [w for w in unique if w[-1:] == "s"]
    return unique.union(*map(word_forms, plural_like)) if plural_like else unique


def plurals_of(form: str) -> set[str]:
    """Every word whose `word_forms` contain `form` (the inverse of the singular rules above)."""
    out = set()
    if len(form) >= 2 and not form.endswith("s"):
        out.add(form + "s")
    if len(form) >= 3 and form.endswith("y"):
        out.add(form[:-1] + "ies")
    if len(form) >= 3 and form.endswith(_ES_STEMS):
        out.add(form + "es")
    return out


@lru_cache(maxsize=50_000)
def word_variants(word: str) -> frozenset[str]:
    """Every word that matches `word` under plural tolerance (finite, so FTS can OR them)."""
    variants: set[str] = set()
    for form in word_forms(word):
        variants.add(form)
        variants |= plurals_of(form)
    return frozenset(variants)


# --------------------------------------------------------------------------------------------------------
# The Porter stemmer exactly as SQLite FTS5 runs it (on UTF-8 bytes), to reason about stemmed index tokens
# --------------------------------------------------------------------------------------------------------

_PORTER_MIN, _PORTER_MAX = 3, 64  # FTS5 passes shorter and longer tokens through unstemmed
_VOWELS = frozenset(b"aeiou")
_Y = ord("y")


def _is_vowel(c: int, y_is_vowel: bool) -> bool:
    return c in _VOWELS or (y_is_vowel and c == _Y)


def _gobble_vc(z: bytes | bytearray, prev_cons: bool) -> int:
    """Index just past the first vowel-consonant sequence of z, or 0 when there is none."""
    cons = prev_cons
    i = 0
    while i < len(z):
        cons = not _is_vowel(z[i], cons)
        if not cons:
            break
        i += 1
    i += 1
    while i < len(z):
        cons = not _is_vowel(z[i], cons)
        if cons:
            return i + 1
        i += 1
    return 0


def _m_gt0(z: bytes | bytearray) -> bool:
    return _gobble_vc(z, False) > 0


def _m_gt1(z: bytes | bytearray) -> bool:
    n = _gobble_vc(z, False)
    return n > 0 and _gobble_vc(z[n:], True) > 0


def _m_eq1(z: bytes | bytearray) -> bool:
    n = _gobble_vc(z, False)
    return n > 0 and _gobble_vc(z[n:], True) == 0


def _o_star(z: bytes | bytearray) -> bool:
    if not z or z[-1] in b"wxy":
        return False
    flags = []
    cons = False
    for c in z:
        cons = not _is_vowel(c, cons)
        flags.append(cons)
    return flags[-3:] == [True, False, True]


def _has_vowel(z: bytes | bytearray) -> bool:
    return any(_is_vowel(c, i > 0) for i, c in enumerate(z))


def _s_or_t_and_m_gt1(z: bytes | bytearray) -> bool:
    return bool(z) and z[-1] in b"st" and _m_gt1(z)


_Rule = tuple[bytes, Callable[[bytearray], bool] | None, bytes]
# (suffix, condition on the stem, replacement), in FTS5's order; the first suffix that fits decides.
_STEP2: tuple[_Rule, ...] = tuple(
    (s.encode(), _m_gt0, r.encode())
    for s, r in (
        ("ational", "ate"),
        ("tional", "tion"),
        ("enci", "ence"),
        ("anci", "ance"),
        ("izer", "ize"),
        ("logi", "log"),
        ("bli", "ble"),
        ("alli", "al"),
        ("entli", "ent"),
        ("eli", "e"),
        ("ousli", "ous"),
        ("ization", "ize"),
        ("ation", "ate"),
        ("ator", "ate"),
        ("alism", "al"),
        ("iveness", "ive"),
        ("fulness", "ful"),
        ("ousness", "ous"),
        ("aliti", "al"),
        ("iviti", "ive"),
        ("biliti", "ble"),
    )
)
_STEP3: tuple[_Rule, ...] = tuple(
    (s.encode(), _m_gt0, r.encode())
    for s, r in (
        ("ical", "ic"),
        ("ness", ""),
        ("icate", "ic"),
        ("iciti", "ic"),
        ("ful", ""),
        ("ative", ""),
        ("alize", "al"),
    )
)
_STEP4: tuple[_Rule, ...] = tuple(
    (s.encode(), _s_or_t_and_m_gt1 if s == "ion" else _m_gt1, b"")
    for s in (
        "al",
        "ance",
        "ence",
        "er",
        "ic",
        "able",
        "ible",
        "ant",
        "ement",
        "ment",
        "ent",
        "ion",
        "ou",
        "ism",
        "ate",
        "iti",
        "ous",
        "ive",
        "ize",
    )
)


def _apply_rules(buf: bytearray, rules: Sequence[_Rule]) -> bool:
    """Apply the first rule whose suffix fits (FTS5 requires a non-empty stem); True if it rewrote buf."""
    for suffix, cond, repl in rules:
        if len(buf) > len(suffix) and buf.endswith(suffix):
            stem = buf[: len(buf) - len(suffix)]
            if cond is None or cond(stem):
                buf[len(stem) :] = repl
                return True
            return False
    return False


def _step1a(buf: bytearray) -> None:
    if buf[-1:] != b"s":
        return
    if buf[-2:-1] == b"e":
        if (len(buf) > 4 and buf[-4:-2] == b"ss") or (len(buf) > 3 and buf[-3:-2] == b"i"):
            del buf[-2:]
        else:
            del buf[-1:]
    elif buf[-2:-1] != b"s":
        del buf[-1:]


def _step1b(buf: bytearray) -> None:
    removed = False
    if len(buf) > 3 and buf.endswith(b"eed"):
        if _m_gt0(buf[:-3]):
            del buf[-1:]
    elif len(buf) > 2 and buf.endswith(b"ed"):
        if _has_vowel(buf[:-2]):
            del buf[-2:]
            removed = True
    elif len(buf) > 3 and buf.endswith(b"ing") and _has_vowel(buf[:-3]):
        del buf[-3:]
        removed = True
    if not removed:
        return
    if len(buf) > 2 and buf[-2:] in (b"at", b"bl", b"iz"):
        buf.append(ord("e"))
        return
    last = buf[-1]
    if len(buf) >= 2 and not _is_vowel(last, False) and last not in b"lsz" and last == buf[-2]:
        del buf[-1:]
    elif _m_eq1(buf) and _o_star(buf):
        buf.append(ord("e"))


def _step1c(buf: bytearray) -> None:
    if buf[-1:] == b"y" and _has_vowel(buf[:-1]):
        buf[-1] = ord("i")


def _step2(buf: bytearray) -> None:
    _apply_rules(buf, _STEP2)


def _step3(buf: bytearray) -> None:
    _apply_rules(buf, _STEP3)


def _step4(buf: bytearray) -> None:
    _apply_rules(buf, _STEP4)


def _step5a(buf: bytearray) -> None:
    if buf[-1:] == b"e":
        stem = buf[:-1]
        if _m_gt1(stem) or (_m_eq1(stem) and not _o_star(stem)):
            del buf[-1:]


def _step5b(buf: bytearray) -> None:
    if len(buf) > 1 and buf.endswith(b"ll") and _m_gt1(buf[:-1]):
        del buf[-1:]


_PORTER_STEPS = (_step1a, _step1b, _step1c, _step2, _step3, _step4, _step5a, _step5b)


def _run_steps(word: bytes, first: int = 0) -> bytes:
    buf = bytearray(word)
    for step in _PORTER_STEPS[first:]:
        if not buf:  # only in the simulated states of _stable_prefix_len, never for a real token
            break
        step(buf)
    return bytes(buf)


@lru_cache(maxsize=100_000)
def porter_stem(word: str) -> bytes:
    """The token FTS5's porter tokenizer stores for an already folded word (UTF-8 bytes)."""
    raw = word.encode("utf-8")
    if not _PORTER_MIN <= len(raw) <= _PORTER_MAX:
        return raw
    return _run_steps(raw)


def _tails(*suffixes: bytes) -> tuple[bytes, ...]:
    return tuple(sorted({s[i:] for s in suffixes for i in range(len(s) + 1)}))


# Per step, every tail its rules can match, i.e. the suffixes of its rule suffixes (aligned with the steps).
_STEP_TAILS = (
    _tails(b"sses", b"ies", b"ss", b"s"),
    _tails(b"eed", b"ed", b"ing"),
    _tails(b"y"),
    _tails(*(rule[0] for rule in _STEP2)),
    _tails(*(rule[0] for rule in _STEP3)),
    _tails(*(rule[0] for rule in _STEP4)),
    _tails(b"e"),
    _tails(b"ll"),
)


def _common_prefix_len(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@lru_cache(maxsize=4096)
def _stable_prefix_len(prefix: bytes) -> int:
    """How many leading bytes of `prefix` survive stemming in every word that starts with it.

    Stemming rewrites only the end of a word. Before the first step that reaches into the prefix the word
    is prefix + tail, and that step's matched suffix covers the whole tail, so the tail is a suffix of one
    of that step's rule suffixes: trying each such tail at each step, then running the remaining steps,
    covers every word (and some unreachable states, which only make the answer more cautious).
    """
    if len(prefix) > _PORTER_MAX:
        return len(prefix)  # every longer word passes through unstemmed
    kept = len(prefix)
    for first, tails in enumerate(_STEP_TAILS):
        for tail in tails:
            stem = _run_steps(prefix + tail, first)
            kept = min(kept, _common_prefix_len(stem, prefix))
    return kept


@lru_cache(maxsize=4096)
def fts_prefix_token(prefix: str) -> str | None:
    """A token q such that the FTS query "q"* finds every stored word that starts with `prefix`.

    FTS5 stems the query token as well, so q is the longest start of the prefix whose own stem is a start
    of what survives stemming. None when that leaves under two characters (no useful prefilter).
    """
    raw = prefix.encode("utf-8")
    target = raw[: _stable_prefix_len(raw)]
    for j in range(len(prefix), 1, -1):
        candidate = prefix[:j]
        if target.startswith(porter_stem(candidate)):
            return candidate
    return None


def _distinct_stems(words: Iterable[str]) -> list[str]:
    """One representative per stemmed index token (FTS stems query tokens itself)."""
    chosen: dict[bytes, str] = {}
    for word in sorted(words, key=lambda w: (len(w), w)):
        chosen.setdefault(porter_stem(word), word)
    return sorted(chosen.values())


# --------------------------------------------------------------------------------------------------------
# A paper's words, computed once per paper and shared by every topic
# --------------------------------------------------------------------------------------------------------


_GAP = ""  # a token between two parts of a field (title | abstract | each author): no word matches it


class FieldText:
    """The words of one query field (ti, abs, au, co, jr or all) as one stream, with lookup tables.

    The parts of a field are joined with a gap token, so a phrase is one scan of the stream and can still
    never run from the title into the abstract, or from one author's name into the next.
    """

    __slots__ = ("_forms", "_positions", "_sorted", "_words", "form_set", "parts", "tokens")

    def __init__(self, parts: Sequence[tuple[str, ...]]) -> None:
        self.parts = tuple(parts)
        tokens: list[str] = []
        for part in self.parts:
            if tokens:
                tokens.append(_GAP)
            tokens.extend(part)
        self.tokens = tuple(tokens)
        # This runs for every candidate paper when a topic scans the history: only what a single-word test
        # needs is built here (with C-level map/chain); phrases and prefixes build their tables on first use.
        self.form_set = _all_forms(chain.from_iterable(self.parts))
        self._forms: tuple[frozenset[str], ...] | None = None
        self._words: frozenset[str] | None = None
        self._positions: dict[str, list[int]] | None = None
        self._sorted: list[str] | None = None

    @property
    def forms(self) -> tuple[frozenset[str], ...]:
        """Each token's forms, by position (for phrases)."""
        if self._forms is None:
            self._forms = tuple(map(word_forms, self.tokens))
        return self._forms

    @property
    def words(self) -> frozenset[str]:
        if self._words is None:
            self._words = frozenset(self.tokens) - {_GAP}
        return self._words

    @property
    def positions(self) -> dict[str, list[int]]:
        """form -> token indexes; only phrases need it, so it is built on first use."""
        if self._positions is None:
            positions: dict[str, list[int]] = {}
            for i, forms in enumerate(self.forms):
                for form in forms:
                    found = positions.get(form)
                    if found is None:
                        positions[form] = [i]
                    else:
                        found.append(i)
            positions.pop(_GAP, None)
            self._positions = positions
        return self._positions

    def has_prefix(self, prefix: str) -> bool:
        if self._sorted is None:
            self._sorted = sorted(self.words)
        i = bisect.bisect_left(self._sorted, prefix)
        return i < len(self._sorted) and self._sorted[i].startswith(prefix)


class _LazyFields(dict[str, FieldText]):
    """A field's words are built on first use: most queries read one or two of the six fields."""

    __slots__ = ("_parts",)

    def __init__(self, parts: dict[str, list[tuple[str, ...]]]) -> None:
        super().__init__()
        self._parts = parts

    def __missing__(self, name: str) -> FieldText:
        built = self[name] = FieldText(self._parts[name])
        return built


class PaperText:
    """Normalised words of a paper, built once (see `of`) and reused across thousands of topics."""

    __slots__ = ("_keys", "arxiv_id", "categories", "fields")

    def __init__(self, paper: Paper) -> None:
        title, abstract = tuple(fold_words(paper.title)), tuple(fold_words(paper.abstract))
        authors = [tuple(fold_words(a.name)) for a in paper.authors]
        comment, journal = tuple(fold_words(paper.comment or "")), tuple(fold_words(paper.journal_ref or ""))
        self.fields = _LazyFields(
            {
                "ti": [title],
                "abs": [abstract],
                "au": authors,
                "co": [comment],
                "jr": [journal],
                "all": [title, abstract, *authors],
            }
        )
        self.arxiv_id = paper.arxiv_id.casefold()
        self.categories = frozenset(c.casefold() for c in (paper.primary_category, *paper.categories))
        self._keys: frozenset[str] | None = None

    @property
    def keys(self) -> frozenset[str]:
        """Every word form, `cat:<category>` and `id:<id>` of the paper (the matcher's index keys)."""
        if self._keys is None:
            # "all" holds the title, abstract and authors; comment and journal ref are fields of their own.
            words = set().union(*(self.fields[f].form_set for f in ("all", "co", "jr")))
            self._keys = frozenset({*words, *(f"cat:{c}" for c in self.categories), f"id:{self.arxiv_id}"})
        return self._keys

    @staticmethod
    def of(paper: Paper) -> PaperText:
        return _paper_text(paper)


@lru_cache(maxsize=2048)
def _paper_text(paper: Paper) -> PaperText:
    return PaperText(paper)


# --------------------------------------------------------------------------------------------------------
# The query tree
# --------------------------------------------------------------------------------------------------------

_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "our",
        "that",
        "the",
        "their",
        "this",
        "to",
        "via",
        "we",
        "with",
        "using",
        "based",
        "new",
        "model",
        "models",
        "learning",
        "data",
        "method",
        "methods",
        "network",
        "networks",
    )
)


def _key_cost(keys: frozenset[str]) -> float:
    """A rough guess of how often any of these index keys occurs in a paper (lower is more selective)."""
    total = 0.0
    for key in keys:
        if key.startswith("cat:"):
            total += 0.3
        elif key.startswith("id:"):
            total += 1e-6
        elif key in _STOPWORDS:
            total += 1.0
        else:
            total += 0.5 ** min(len(key), 12)
    return total


@dataclass(frozen=True)
class QWord:
    """One word of a term: exact (plural tolerant) or a prefix."""

    text: str
    prefix: bool = False

    @cached_property
    def forms(self) -> frozenset[str]:
        return word_forms(self.text)

    def fits(self, text: FieldText, i: int) -> bool:
        if self.prefix:
            return text.tokens[i].startswith(self.text)
        return not text.forms[i].isdisjoint(self.forms)

    def fts_alternatives(self) -> list[_FtsToken] | None:
        """FTS tokens, any of which a matching word produces in the index; None = no usable token."""
        if self.prefix:
            token = fts_prefix_token(self.text)
            return None if token is None else [(token, True)]
        return [(v, False) for v in _distinct_stems(word_variants(self.text))]


Predicate = Callable[[PaperText], bool]


class Node:
    """A node of a parsed query; `pos` is its offset in the query text."""

    pos: int = 0

    def compile(self) -> Predicate:
        """A closure deciding the node on a PaperText: built once, run for every paper (hence no methods)."""
        raise NotImplementedError

    def fts(self) -> str | None:
        """FTS5 expression that every matching paper satisfies; None means "no constraint"."""
        raise NotImplementedError

    def arxiv(self) -> str:
        raise NotImplementedError

    def keys(self) -> frozenset[str] | None:
        """Index keys of which every matching paper holds at least one; None when there are none."""
        raise NotImplementedError

    def required_categories(self) -> frozenset[str] | None:
        """Categories (casefolded) of which every matching paper has at least one; None = no such bound."""
        return None

    def walk(self) -> Iterator[Node]:
        yield self


@dataclass(frozen=True, eq=False)
class TextTerm(Node):
    """A word or phrase in a text field: consecutive words within one segment of the field."""

    scope: str  # ti, abs, co, jr or all
    words: tuple[QWord, ...]
    raw: str
    pos: int = 0

    _COLUMNS: ClassVar[dict[str, str]] = {"ti": "title", "abs": "abstract", "all": "{title abstract authors}"}

    def compile(self) -> Predicate:
        scope, first = self.scope, self.words[0]
        if len(self.words) > 1:
            return self._compile_phrase()
        if first.prefix:
            return lambda paper: paper.fields[scope].has_prefix(first.text)
        if len(first.forms) == 1:
            (form,) = first.forms
            return lambda paper: form in paper.fields[scope].form_set
        forms = first.forms
        return lambda paper: not paper.fields[scope].form_set.isdisjoint(forms)

    def _compile_phrase(self) -> Predicate:
        scope, size = self.scope, len(self.words)
        required = [w.forms for w in self.words if not w.prefix]
        starts = self.words[0].forms
        rest = tuple(enumerate(self.words[1:], 1))

        def phrase(paper: PaperText) -> bool:
            text = paper.fields[scope]
            if any(text.form_set.isdisjoint(forms) for forms in required):
                return False
            positions = text.positions
            last = len(text.tokens) - size
            for form in starts:
                for i in positions.get(form, ()):
                    if i <= last and all(w.fits(text, i + k) for k, w in rest):
                        return True
            return False

        return phrase

    def fts(self) -> str | None:
        column = self._COLUMNS.get(self.scope)
        if column is None:
            return None  # comment and journal_ref are not indexed
        groups = [w.fts_alternatives() for w in self.words]
        while groups and groups[-1] is None:
            groups.pop()  # a prefix too short to use: the shorter phrase still holds
        if not groups:
            return None
        return f"{column} : {_fts_phrase([g for g in groups if g is not None])}"

    def arxiv(self) -> str:
        return f"{self.scope}:{self.raw}"

    def keys(self) -> frozenset[str] | None:
        exact = [w.forms for w in self.words if not w.prefix]
        return min(exact, key=_key_cost) if exact else None


_FtsToken = tuple[str, bool]  # (folded word, used as a prefix)
_MAX_PHRASE_COMBINATIONS = 8


def _fts_phrase(groups: list[list[_FtsToken]]) -> str:
    """A phrase whose words have alternatives: an OR of phrases, or an AND of the words when too many."""
    combinations = 1
    for group in groups:
        combinations *= len(group)
    if combinations > _MAX_PHRASE_COMBINATIONS:
        return "(" + " AND ".join(_fts_or([_fts_string([t]) for t in g]) for g in groups) + ")"
    return _fts_or([_fts_string(list(combo)) for combo in product(*groups)])


def _fts_string(tokens: list[_FtsToken]) -> str:
    """One quoted FTS string (a phrase when several tokens); quoting keeps user text out of FTS syntax."""
    words = " ".join(word for word, _ in tokens)
    return _quote(words) + ("*" if tokens[-1][1] else "")


def _fts_or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "(" + " OR ".join(items) + ")"


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@dataclass(frozen=True, eq=False)
class AuthorTerm(Node):
    """au: words that must all occur in one author's name, in any order; single letters are initials."""

    words: tuple[QWord, ...]
    raw: str
    pos: int = 0

    def compile(self) -> Predicate:
        exact = [w.text for w in self.words if not w.prefix]
        prefixes = [w.text for w in self.words if w.prefix]

        def in_author(author: tuple[str, ...]) -> bool:
            return all(w in author for w in exact) and all(
                any(t.startswith(p) for t in author) for p in prefixes
            )

        def author_term(paper: PaperText) -> bool:
            text = paper.fields["au"]
            if any(w not in text.words for w in exact):
                return False
            return any(in_author(author) for author in text.parts)

        return author_term

    def fts(self) -> str | None:
        parts = []
        for w in self.words:
            if not w.prefix:
                parts.append(_quote(w.text))
            elif (token := fts_prefix_token(w.text)) is not None:
                parts.append(_fts_string([(token, True)]))
        if not parts:
            return None
        return "authors : " + (parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")")

    def arxiv(self) -> str:
        return f"au:{self.raw}"

    def keys(self) -> frozenset[str] | None:
        exact = [frozenset({w.text}) for w in self.words if not w.prefix]
        return min(exact, key=_key_cost) if exact else None


@dataclass(frozen=True, eq=False)
class CategoryTerm(Node):
    category: str  # casefolded; without the * for prefixes
    prefix: bool
    raw: str
    pos: int = 0

    def compile(self) -> Predicate:
        category = self.category
        if self.prefix:
            return lambda paper: any(c.startswith(category) for c in paper.categories)
        return lambda paper: category in paper.categories

    def fts(self) -> str | None:
        return None  # categories are not in the FTS table: no constraint

    def arxiv(self) -> str:
        return f"cat:{self.raw}"

    def keys(self) -> frozenset[str] | None:
        return None if self.prefix else frozenset({f"cat:{self.category}"})

    def required_categories(self) -> frozenset[str] | None:
        return None if self.prefix else frozenset({self.category})


@dataclass(frozen=True, eq=False)
class IdTerm(Node):
    arxiv_id: str  # casefolded base id, or an id prefix
    prefix: bool
    raw: str
    pos: int = 0

    def compile(self) -> Predicate:
        arxiv_id = self.arxiv_id
        if self.prefix:
            return lambda paper: paper.arxiv_id.startswith(arxiv_id)
        return lambda paper: paper.arxiv_id == arxiv_id

    def fts(self) -> str | None:
        return None

    def arxiv(self) -> str:
        return f"id:{self.raw}"

    def keys(self) -> frozenset[str] | None:
        return None if self.prefix else frozenset({f"id:{self.arxiv_id}"})


@dataclass(frozen=True, eq=False)
class Not(Node):
    """A negated part; only valid inside an AND that also has a positive part (arXiv's ANDNOT)."""

    child: Node
    pos: int = 0

    def compile(self) -> Predicate:
        child = self.child.compile()
        return lambda paper: not child(paper)

    def fts(self) -> str | None:
        return None  # left to the evaluator: leaving it out only widens the prefilter

    def arxiv(self) -> str:
        return self.child.arxiv()

    def keys(self) -> frozenset[str] | None:
        return None

    def walk(self) -> Iterator[Node]:
        yield self
        yield from self.child.walk()


@dataclass(frozen=True, eq=False)
class And(Node):
    children: tuple[Node, ...]
    pos: int = 0

    def compile(self) -> Predicate:
        # negations last: the positive parts usually decide, and cheaply
        ordered = sorted(self.children, key=lambda c: isinstance(c, Not))
        parts = [c.compile() for c in ordered]
        if len(parts) == 2:
            first, second = parts
            return lambda paper: first(paper) and second(paper)
        return lambda paper: all(part(paper) for part in parts)

    def fts(self) -> str | None:
        parts = [p for c in self.children if (p := c.fts()) is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def arxiv(self) -> str:
        positive = [c for c in self.children if not isinstance(c, Not)]
        negative = [c for c in self.children if isinstance(c, Not)]
        left = " AND ".join(_arxiv_operand(c) for c in positive)
        if not negative:
            return left
        if len(positive) > 1:
            left = f"({left})"
        right = " OR ".join(_arxiv_operand(c.child) for c in negative)
        return f"{left} ANDNOT ({right})" if len(negative) > 1 else f"{left} ANDNOT {right}"

    def keys(self) -> frozenset[str] | None:
        options = [k for c in self.children if (k := c.keys()) is not None]
        return min(options, key=_key_cost) if options else None

    def required_categories(self) -> frozenset[str] | None:
        # every positive part binds the match: the narrowest bound is the most useful (a Not part has none)
        options = [r for c in self.children if (r := c.required_categories()) is not None]
        return min(options, key=len) if options else None

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass(frozen=True, eq=False)
class Or(Node):
    children: tuple[Node, ...]
    pos: int = 0

    def compile(self) -> Predicate:
        parts = [c.compile() for c in self.children]
        if len(parts) == 2:
            first, second = parts
            return lambda paper: first(paper) or second(paper)
        return lambda paper: any(part(paper) for part in parts)

    def fts(self) -> str | None:
        parts = [c.fts() for c in self.children]
        if any(p is None for p in parts):
            return None  # one branch without a constraint makes the whole OR unconstrained
        return "(" + " OR ".join(p for p in parts if p is not None) + ")"

    def arxiv(self) -> str:
        return " OR ".join(_arxiv_operand(c) for c in self.children)

    def keys(self) -> frozenset[str] | None:
        union: set[str] = set()
        for c in self.children:
            k = c.keys()
            if k is None:
                return None
            union |= k
        return frozenset(union)

    def required_categories(self) -> frozenset[str] | None:
        # a bound only when every branch has one: one free branch frees the whole OR
        union: set[str] = set()
        for c in self.children:
            r = c.required_categories()
            if r is None:
                return None
            union |= r
        return frozenset(union)

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()


def _arxiv_operand(node: Node) -> str:
    """Parenthesise compound operands, so arXiv's own operator precedence never matters."""
    text = node.arxiv()
    return f"({text})" if isinstance(node, And | Or) and len(node.children) > 1 else text


# --------------------------------------------------------------------------------------------------------
# Parsing: luqum reads the Lucene-like syntax, then the tree is checked and converted
# --------------------------------------------------------------------------------------------------------

_ANDNOT = "ANDNOT"
_PARSE_LOCK = threading.Lock()  # PLY keeps some parser state on the shared parser object
_CATEGORY = re.compile(r"[a-z][a-z\-]*(\.[a-z][a-z\-]*)?")
_CATEGORY_PREFIX = re.compile(r"[a-z][a-z\-]*(\.[a-z\-]*)?")


@dataclass
class _Source:
    """The query as written, the text handed to luqum (ANDNOT rewritten) and the offsets between them."""

    text: str
    rewritten: str
    origin: list[int]  # origin[i] = offset in `text` of rewritten[i]; one extra entry for the end
    andnot_at: set[int]  # offsets in `text` covered by an ANDNOT

    def at(self, rewritten_pos: int | None) -> int:
        if rewritten_pos is None:
            return len(self.text.rstrip())
        return self.origin[max(0, min(rewritten_pos, len(self.origin) - 1))]

    def error(self, rewritten_pos: int | None, expected: str) -> QuerySyntaxError:
        return QuerySyntaxError(self.text, self.at(rewritten_pos), expected)


def parse_query(text: str) -> TopicQuery:
    """Parse a topic query; raises QuerySyntaxError with the position and what was expected there."""
    return TopicQuery(text)


def _parse(text: str) -> Node:
    if len(text) > MAX_QUERY_LENGTH:
        raise QuerySyntaxError(
            text, MAX_QUERY_LENGTH, f"at most {MAX_QUERY_LENGTH} characters (the query has {len(text)})"
        )
    if not text.strip():
        raise QuerySyntaxError(text, 0, f"{_TERM_EXPECTED}: the query is empty")
    source = _rewrite_andnot(text)
    tree = _run_luqum(source)
    node = _Converter(source).convert(tree, None)
    _check_negations(node, source, inside_and=False)
    return node


def _lex(text: str) -> list[LexToken]:
    """luqum's tokens for `text`; the lexer's state is per call."""
    lexer = _luqum_lexer.clone()
    lexer.input(text)
    return list(iter(lexer.token, None))


def _rewrite_andnot(text: str) -> _Source:
    """arXiv's ANDNOT is not Lucene: rewrite each ANDNOT token to "AND NOT", remembering offsets."""
    try:
        tokens = _lex(text)
    except IllegalCharacterError:
        tokens = []  # reported with a position when luqum parses the text below
    starts = sorted(t.lexpos for t in tokens if t.type == "TERM" and str(t.value) == _ANDNOT)
    rewritten: list[str] = []
    origin: list[int] = []
    previous = 0
    for start in starts:
        rewritten.append(text[previous:start])
        origin.extend(range(previous, start))
        rewritten.append("AND NOT")
        origin.extend([start] * 4 + [start + 3] * 3)
        previous = start + len(_ANDNOT)
    rewritten.append(text[previous:])
    origin.extend(range(previous, len(text) + 1))
    covered = {start + i for start in starts for i in range(len(_ANDNOT))}
    return _Source(text, "".join(rewritten), origin, covered)


def _run_luqum(source: _Source) -> lq.Item:
    lexer = _luqum_lexer.clone()
    seen: list[LexToken | None] = []

    def next_token() -> LexToken | None:  # records tokens, so an error can say where and after what
        token = lexer.token()
        seen.append(token)
        return token

    try:
        with _PARSE_LOCK:
            return _luqum_parser.parse(source.rewritten, lexer=lexer, tokenfunc=next_token)
    except IllegalCharacterError:
        raise _illegal_character(source, lexer.lexpos) from None
    except Exception:  # luqum raises assorted errors (syntax, decimal, ...): all are syntax errors here
        raise _syntax_error(source, seen) from None


def _illegal_character(source: _Source, pos: int) -> QuerySyntaxError:
    char = source.rewritten[pos : pos + 1]
    if char == '"':
        opened = source.at(pos)
        return QuerySyntaxError(source.text, len(source.text), f"'\"' to close the phrase opened at {opened}")
    if char == "'":
        return source.error(pos, f"{_TERM_EXPECTED}; use double quotes for phrases")
    return source.error(pos, f"{_TERM_EXPECTED}, not {char!r}")


def _syntax_error(source: _Source, seen: list[LexToken | None]) -> QuerySyntaxError:
    """Say what was expected where the parser stopped, from the token before it."""
    bad = seen[-1] if seen else None
    before = seen[-2] if len(seen) > 1 else None
    after = f" after {_token_name(source, before)}" if before is not None else ""
    if bad is None:  # the text ended too early
        if before is not None and before.type in {"AND_OP", "OR_OP", "NOT", "COLUMN", "LPAREN"}:
            return source.error(None, _TERM_EXPECTED + after)
        unclosed = _unclosed_paren(seen)
        if unclosed is not None:
            return source.error(None, f"')' to close the '(' at {source.at(unclosed)}")
        return source.error(None, _TERM_EXPECTED + after)
    if before is None or before.type in {"AND_OP", "OR_OP", "NOT", "COLUMN", "LPAREN"}:
        where = after or f" before {_token_name(source, bad)}"
        return source.error(bad.lexpos, _TERM_EXPECTED + where)
    if bad.type == "RPAREN" and _unclosed_paren(seen[:-1]) is None:
        return source.error(bad.lexpos, "AND, OR, a term or the end of the query; this ')' closes nothing")
    if bad.type == "COLUMN":
        return source.error(bad.lexpos, f"a field name before ':' ({_FIELD_LIST})")
    return source.error(bad.lexpos, f"AND, OR, ANDNOT, {_TERM_EXPECTED}")


def _unclosed_paren(tokens: list[LexToken | None]) -> int | None:
    opened: list[int] = []
    for t in tokens:
        if t is not None and t.type == "LPAREN":
            opened.append(t.lexpos)
        elif t is not None and t.type == "RPAREN" and opened:
            opened.pop()
    return opened[-1] if opened else None


def _token_name(source: _Source, token: LexToken) -> str:
    if token.type in {"AND_OP", "NOT"} and source.at(token.lexpos) in source.andnot_at:
        return _ANDNOT
    if token.type == "COLUMN":
        return "':'"
    if token.type in {"LPAREN", "RPAREN"}:
        return f"'{token.value}'"
    return str(token.value)


_UNSUPPORTED: tuple[tuple[type, str], ...] = (
    (lq.Prohibit, "a term; use ANDNOT (or NOT) instead of '-'"),
    (lq.Plus, "a term; '+' is not supported (terms are required by default)"),
    (lq.Range, "a term; ranges like [a TO b] are not supported in topics"),
    (lq.From, "a term; '>' comparisons are not supported"),
    (lq.To, "a term; '<' comparisons are not supported"),
    (lq.Fuzzy, "a term; fuzzy '~' search is not supported"),
    (lq.Proximity, "a phrase; proximity '~' search is not supported"),
    (lq.Boost, "a term; '^' boosts are not supported"),
    (lq.Regex, "a term; regular expressions are not supported"),
)


class _Converter:
    """luqum tree -> query Node, checking fields and terms; positions are reported in the original text."""

    def __init__(self, source: _Source) -> None:
        self.source = source

    def convert(self, item: lq.Item, field_name: str | None) -> Node:
        for kind, expected in _UNSUPPORTED:
            if isinstance(item, kind):
                raise self.source.error(item.pos, expected)  # type: ignore[attr-defined]  # luqum sets pos on every item
        pos = self.source.at(item.pos)
        if isinstance(item, lq.SearchField):
            return self._search_field(item, field_name)
        if isinstance(item, lq.Group | lq.FieldGroup):
            return self.convert(item.children[0], field_name)
        if isinstance(item, lq.Not):
            return Not(self.convert(item.children[0], field_name), pos=pos)
        if isinstance(item, lq.AndOperation | lq.UnknownOperation):
            return _flatten(And, [self.convert(c, field_name) for c in item.children], pos)
        if isinstance(item, lq.OrOperation):
            return _flatten(Or, [self.convert(c, field_name) for c in item.children], pos)
        if isinstance(item, lq.Word | lq.Phrase):
            return self._term(item, field_name or "all")
        raise self.source.error(item.pos, _TERM_EXPECTED)

    def _search_field(self, item: lq.SearchField, outer: str | None) -> Node:
        name = item.name.lower()
        if outer is not None:
            raise self.source.error(item.pos, f"{_TERM_EXPECTED} inside {outer}:(...), not another field")
        if name not in FIELDS:
            raise self.source.error(item.pos, f"a field among {_FIELD_LIST}, not {item.name!r}")
        return self.convert(item.expr, name)

    def _term(self, item: lq.Word | lq.Phrase, field_name: str) -> Node:
        raw = str(item.value)
        pos = self.source.at(item.pos)
        if field_name == "cat":
            return self._category(item, raw, pos)
        if field_name == "id":
            return self._arxiv_id(item, raw, pos)
        words = self._words(item, raw)
        if field_name == "au":
            initials = tuple(QWord(w.text, True) if _is_initial(w) else w for w in words)
            return AuthorTerm(initials, raw, pos)
        return TextTerm(field_name, words, raw, pos)

    def _words(self, item: lq.Word | lq.Phrase, raw: str) -> tuple[QWord, ...]:
        is_phrase = isinstance(item, lq.Phrase)
        body = raw[1:-1] if is_phrase else raw
        prefix = not is_phrase and body.endswith("*")
        if not is_phrase:
            self._check_wildcards(item, body)
        words = fold_words(body[:-1] if prefix else body)
        if not words:
            raise self.source.error(item.pos, "a word with letters or digits")
        if prefix and not fold_words(body[-2:-1]):
            raise self.source.error(item.pos + len(body) - 1, "a letter or digit right before '*'")
        return tuple(QWord(w, prefix and i == len(words) - 1) for i, w in enumerate(words))

    def _check_wildcards(self, item: lq.Item, body: str) -> None:
        for i, char in enumerate(body):
            if char == "?" or (char == "*" and i != len(body) - 1):
                raise self.source.error(item.pos + i, "'*' only at the end of a term ('?' is not supported)")

    def _category(self, item: lq.Word | lq.Phrase, raw: str, pos: int) -> Node:
        value = (raw[1:-1] if isinstance(item, lq.Phrase) else raw).strip().lower()
        prefix = value.endswith("*")
        name = value[:-1] if prefix else value
        pattern = _CATEGORY_PREFIX if prefix else _CATEGORY
        if not name or pattern.fullmatch(name) is None:
            raise self.source.error(item.pos, "a category like cs.LG, hep-th or cs.*")
        return CategoryTerm(name, prefix, raw, pos)

    def _arxiv_id(self, item: lq.Word | lq.Phrase, raw: str, pos: int) -> Node:
        value = (raw[1:-1] if isinstance(item, lq.Phrase) else raw).strip()
        if value.endswith("*") and len(value) > 1:
            return IdTerm(value[:-1].casefold(), True, raw, pos)
        try:
            base, _version = split_arxiv_id(value)
        except ValueError:
            raise self.source.error(item.pos, "an arXiv id like 2401.12345 or hep-th/9901001") from None
        return IdTerm(base.casefold(), False, raw, pos)


def _is_initial(word: QWord) -> bool:
    return len(word.text) == 1 and word.text.isalpha()


def _flatten(kind: type[And] | type[Or], children: list[Node], pos: int) -> Node:
    flat: list[Node] = []
    for child in children:
        flat.extend(child.children if isinstance(child, kind) else [child])
    return kind(tuple(flat), pos=pos)


def _check_negations(node: Node, source: _Source, inside_and: bool) -> None:
    """NOT/ANDNOT must subtract from a positive part joined by AND, as arXiv's binary ANDNOT does."""
    if isinstance(node, Not):
        if not inside_and:
            raise QuerySyntaxError(
                source.text, node.pos, "a positive term before NOT: a topic cannot be only a negation"
            )
        _check_negations(node.child, source, inside_and=False)
    elif isinstance(node, And):
        if all(isinstance(c, Not) for c in node.children):
            raise QuerySyntaxError(
                source.text, node.children[0].pos, "a positive term before NOT (write 'A ANDNOT B')"
            )
        for child in node.children:
            _check_negations(child, source, inside_and=True)
    elif isinstance(node, Or):
        for child in node.children:
            _check_negations(child, source, inside_and=False)


# --------------------------------------------------------------------------------------------------------
# The public query object
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicQuery:
    """A parsed topic query. `TopicQuery(text)` parses like `parse_query(text)`; equal when texts are."""

    text: str
    _root: Node = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_root", _parse(self.text))

    def matches(self, paper: Paper | PaperText) -> bool:
        text = paper if isinstance(paper, PaperText) else PaperText.of(paper)
        return self.predicate(text)

    @cached_property
    def predicate(self) -> Predicate:
        """The compiled evaluator over a PaperText (what `matches` runs); the matcher calls it directly."""
        return self._root.compile()

    def to_fts5(self) -> str | None:
        """FTS5 MATCH expression over papers_fts that every match satisfies; None = no safe prefilter."""
        return self._fts

    @cached_property
    def _fts(self) -> str | None:
        return self._root.fts()

    def to_arxiv(self) -> str:
        """The query for arXiv's search_query parameter: explicit fields, parenthesised, ANDNOT."""
        return self._root.arxiv()

    def categories(self) -> frozenset[str]:
        """Categories (casefolded) of which every matching paper has at least one: a filter for history scans
        and the denominator of the topic's share. Empty when the query does not bind the category (`cat:cs.CL
        OR ti:x`, a negated or a prefix cat: term)."""
        return self._root.required_categories() or frozenset()

    def index_keys(self) -> frozenset[str] | None:
        """Keys (see PaperText.keys) of which every matching paper holds one; None = always evaluate."""
        return self._keys

    @cached_property
    def _keys(self) -> frozenset[str] | None:
        return self._root.keys()

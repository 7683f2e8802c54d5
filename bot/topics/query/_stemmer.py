"""The Porter stemmer exactly as SQLite FTS5 runs it (on UTF-8 bytes), and what of a prefix survives it.

The store's index holds stems and FTS5 stems query tokens too: "bus" is stored as "bu" but "buses" as "buse",
and "modeling" as "model", which the query token "modelin"* never reaches. A prefilter that must never drop a
true match has to know each stem, so this is a port of SQLite's own rules (a property test compares the two),
plus the reasoning about which part of a prefix survives stemming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

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
    if len(buf) > 2 and bytes(buf[-2:]) in (b"at", b"bl", b"iz"):
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


def distinct_stems(words: Iterable[str]) -> list[str]:
    """One representative per stemmed index token (FTS stems query tokens itself)."""
    chosen: dict[bytes, str] = {}
    for word in sorted(words, key=lambda w: (len(w), w)):
        chosen.setdefault(porter_stem(word), word)
    return sorted(chosen.values())

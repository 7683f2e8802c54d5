"""Plural tolerance: two words match when they share a singular form ("model"/"models", "policy"/"policies").

Rules on folded words rather than a stemmer, so that matching stays exact and explainable; `word_variants`
inverts them, so the FTS5 prefilter can OR every spelling that matches a query word.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

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


def all_forms(words: Iterable[str]) -> frozenset[str]:
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

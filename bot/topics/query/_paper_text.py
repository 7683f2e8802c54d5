"""A paper's words as the query fields see them, folded once per paper and shared by every topic.

The matcher evaluates thousands of topics on each new paper and a new topic scans the whole history, so the
text is folded once, and each field's lookup tables are built only when a query first needs them.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain

from bot.models import Paper
from bot.topics.query._folding import fold_words
from bot.topics.query._plurals import all_forms, word_forms

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
        self.form_set = all_forms(chain.from_iterable(self.parts))
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

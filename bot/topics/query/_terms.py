"""The leaves of a query: words and phrases in a text field, author names, categories and arXiv ids.

Each leaf implements the Node back ends for its field, and the text leaves quote what they send to FTS5, so
user text can never become FTS5 syntax.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import product
from typing import ClassVar

from bot.topics.query._nodes import Node, Predicate, key_cost
from bot.topics.query._paper_text import FieldText, PaperText
from bot.topics.query._plurals import word_forms, word_variants
from bot.topics.query._stemmer import distinct_stems, fts_prefix_token


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
        return [(v, False) for v in distinct_stems(word_variants(self.text))]


@dataclass(frozen=True, eq=False)
class TextTerm(Node):
    """A word or phrase in a text field: consecutive words within one segment of the field."""

    scope: str  # ti, abs, co, jr or all
    words: tuple[QWord, ...]
    raw: str
    pos: int = 0

    # The FTS5 column filter of each indexed field. `all` is every column of papers_fts, so it takes none: FTS5
    # applies a filter by decoding every position list of the word, which made ranking a common word 4x slower.
    _COLUMNS: ClassVar[dict[str, str]] = {"ti": "title : ", "abs": "abstract : ", "all": ""}

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
        return column + _fts_phrase([g for g in groups if g is not None])

    def arxiv(self) -> str:
        return f"{self.scope}:{self.raw}"

    def keys(self) -> frozenset[str] | None:
        exact = [w.forms for w in self.words if not w.prefix]
        return min(exact, key=key_cost) if exact else None


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
        return min(exact, key=key_cost) if exact else None


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

"""How the store's full-text index splits text into tokens, named once for everything that must agree with it.

Pure constants, below both the store and the query language (bot/topics/query/), so that neither imports the other.

`papers_fts` (migration 0001) indexes title, abstract and authors with PAPERS_TOKENIZER. Topic queries fold
words locally exactly as FOLDING_TOKENIZER does (the same tokenizer without the Porter stemmer) and reason
about the stems, so that their FTS5 prefilter never drops a paper their evaluator would match. A migration
cannot import Python: a test checks that the migrated table still uses PAPERS_TOKENIZER.
"""

from __future__ import annotations

FOLDING_TOKENIZER = "unicode61 remove_diacritics 2"
"""Lower-cases, drops diacritics (incl. combining marks) and splits on anything not a letter or digit."""

PAPERS_TOKENIZER = f"porter {FOLDING_TOKENIZER}"
"""The tokenizer of papers_fts: FOLDING_TOKENIZER's words, then Porter stemmed."""

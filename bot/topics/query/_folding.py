"""Text into words exactly as the store's FTS5 tokenizer splits and folds it (before Porter stemming): the rule
lives in bot/fts_tokenizer.py, below both the store (which indexes those words on PostgreSQL) and the query
language."""

from __future__ import annotations

from bot.fts_tokenizer import fold_words

__all__ = ["fold_words"]

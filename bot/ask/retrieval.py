"""The stored papers most relevant to a question: the full-text index's bm25 ranking over the question's words,
within a topic (and its sub-topics) and a time when given.

Bounded for a million papers: ranking costs one bm25 score per paper holding any of the words, so the words
held by more than MAX_TERM_PAPERS papers ("model", "learning") are left out when rarer ones remain (they
would add little to the ranking anyway: bm25 weighs a word by its rarity), and at most MAX_TERMS words are
used, the rarest first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.ask.question import stem
from bot.models import Paper
from bot.store import Store

MAX_TERMS = 8
MAX_TERM_PAPERS = 40_000
CANDIDATES = 30  # papers whose sentences compete to answer


@dataclass(frozen=True)
class Retrieved:
    papers: list[Paper]  # best first
    words: list[str]  # the words ranked by


async def retrieve(
    store: Store,
    words: Sequence[str],
    *,
    topic_id: int | None = None,
    including: Sequence[int] = (),
    since: datetime | None = None,
    limit: int = CANDIDATES,
) -> Retrieved:
    """The `limit` best papers for the question's content `words` (bot.ask.question.content_words)."""
    chosen, rare = await rank_words(store, words)
    if not chosen:
        return Retrieved([], [])
    # Folded words are letters and digits only: safe to quote. Only common words: papers holding both.
    fts = (" OR " if rare else " AND ").join(f'"{w}"' for w in chosen)
    hits = await store.search.ranked(fts, topic_id=topic_id, including=including, since=since, limit=limit)
    return Retrieved([hit.paper for hit in hits], chosen)


async def rank_words(store: Store, words: Sequence[str]) -> tuple[list[str], bool]:
    """The words to rank by: those some paper holds, rarest first, at most MAX_TERMS, without the very common
    ones; and whether any is not very common (else the two rarest, which a paper must then hold both of)."""
    by_stem = {stem(w): w for w in words}
    counts = await store.search.term_documents(list(by_stem))
    held = sorted(counts, key=lambda stem: counts[stem])
    rare = [s for s in held if counts[s] <= MAX_TERM_PAPERS]
    kept = rare[:MAX_TERMS] if rare else held[:2]
    return [by_stem[s] for s in kept], bool(rare)

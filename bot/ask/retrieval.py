"""The stored papers most relevant to a question: the full-text index's bm25 ranking over the question's words,
within a topic (and its sub-topics) and a time when given.

Bounded for a million papers: ranking costs one bm25 score per paper holding any of the words (~8 µs each),
so words are taken rarest first while the papers holding them add up to at most RANKED_PAPERS; the common
ones left out ("model", "learning") would add little to the ranking anyway, as bm25 weighs a word by its
rarity. How many papers hold a word is counted only up to that bound, so even "the" costs a few milliseconds.
When even the rarest word is that common, papers must hold all the words instead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.ask.question import stem
from bot.models import Paper
from bot.store import Store

MAX_TERMS = 8
RANKED_PAPERS = 20_000  # bm25 scores one ranking may compute: ~150 ms at most
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
    """The words to rank by, rarest first, and whether any paper holding one may rank (else a paper must hold
    them all): words some paper holds, while their papers add up to at most RANKED_PAPERS."""
    by_stem = {stem(w): w for w in words}  # "models" and "model" are one word to the index
    counts = await store.search.papers_holding(list(by_stem.values()), cap=RANKED_PAPERS + 1)
    held = sorted((w for w in counts if counts[w]), key=lambda w: counts[w])[:MAX_TERMS]
    kept: list[str] = []
    total = 0
    for word in held:
        total += counts[word]
        if total > RANKED_PAPERS:
            break
        kept.append(word)
    return (kept, True) if kept else (held, False)

"""Synthetic papers with a realistic word distribution (Zipf over a fixed vocabulary), for benchmarks."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from bot.models import Author, Paper

CATEGORIES = ("cs.AI", "cs.CL", "cs.CV", "cs.LG", "cs.RO", "cs.MA", "stat.ML")
_SYLLABLES = ("ka", "lo", "mi", "ne", "ra", "ti", "su", "ve", "do", "pa", "qui", "zen", "tor", "lex", "ion")


def vocabulary(size: int = 20_000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    """Deterministic papers: word ranks follow a Zipf law (s ~ 1.1), as in real abstracts."""

    def __init__(self, seed: int = 1, vocab_size: int = 20_000) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(vocab_size)
        weights = [1.0 / (rank + 1) ** 1.1 for rank in range(len(self.words))]
        total = sum(weights)
        acc = 0.0
        self.cum = []
        for w in weights:
            acc += w / total
            self.cum.append(acc)

    def text(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum, k=n))

    def papers(self, count: int, *, start: int = 0, end: datetime | None = None) -> Iterator[Paper]:
        end = end or datetime(2026, 11, 20, tzinfo=UTC)
        for i in range(start, start + count):
            published = end - timedelta(seconds=self.rng.randint(0, 365 * 86400))
            cats = tuple(dict.fromkeys(self.rng.sample(CATEGORIES, self.rng.randint(1, 3))))
            yield Paper(
                arxiv_id=f"{2000 + i // 100000:04d}.{i % 100000:05d}",
                version=1,
                title=self.text(10).capitalize(),
                abstract=self.text(150).capitalize() + ".",
                authors=tuple(Author(self.text(2).title()) for _ in range(self.rng.randint(1, 8))),
                primary_category=cats[0],
                categories=cats,
                published=published,
                updated=published,
            )

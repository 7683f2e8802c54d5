"""Synthetic papers for benchmarks: a realistic word distribution (Zipf over a fixed vocabulary), and the
hostile entries a broken or malicious feed could serve (huge names, author lists, LaTeX, forged links)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
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

    def papers(
        self,
        count: int,
        *,
        start: int = 0,
        end: datetime | None = None,
        span: timedelta = timedelta(days=365),
    ) -> Iterator[Paper]:
        """`count` papers submitted in the `span` before `end`."""
        end = end or datetime(2026, 11, 20, tzinfo=UTC)
        for i in range(start, start + count):
            published = end - timedelta(seconds=self.rng.randint(0, int(span.total_seconds())))
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


def titled_papers(titles: Sequence[str], *, end: datetime, start: int) -> list[Paper]:
    """Ordinary papers with these titles, a minute apart before `end`, ids 2611.<start + i>."""
    papers = []
    for i, title in enumerate(titles):
        published = end - timedelta(minutes=i + 1)
        papers.append(
            Paper(
                arxiv_id=f"2611.{start + i:05d}",
                version=1,
                title=title,
                abstract=f"We study problem {i}. Our method improves results.",
                authors=(Author("Ada Lovelace", ("University of London",)), Author("Alan Turing")),
                primary_category="cs.LG",
                categories=("cs.LG", "cs.AI"),
                published=published,
                updated=published,
            )
        )
    return papers


# LaTeX that once cost quadratic time (an unclosed script macro, runs of dollars), and markdown forgeries.
_HOSTILE_LATEX = "_\\mathrm{" * 3 + "$" * 9 + r" \frac{x^{"
FORGED = "See [1] and [github.com/lab/repo](https://evil.example/phish), or https://evil.example/x @everyone"


def hostile_papers(
    *, end: datetime, start: int, title: str = "GRPO post-training", authors: int = 1_000_000
) -> list[Paper]:
    """One paper per hostile trait, each otherwise ordinary and titled with `title` (so a topic can match
    them), submitted in the minutes before `end`, ids from `start`."""

    def paper(i: int, **fields: object) -> Paper:
        published = end - timedelta(minutes=i + 1)
        values: dict[str, object] = {
            "arxiv_id": f"2611.{start + i:05d}",
            "version": 1,
            "title": f"{title}: hostile entry {i}",
            "abstract": f"{title} under attack. {FORGED}",
            "authors": (Author("Ada Lovelace", ("University of London",)),),
            "primary_category": "cs.LG",
            "categories": ("cs.LG",),
            "published": published,
            "updated": published,
            "comment": FORGED,
        }
        values.update(fields)
        return Paper(**values)  # type: ignore[arg-type]

    return [
        paper(0, authors=(Author("Ada " + _HOSTILE_LATEX * 1_100),)),  # a 50k-character author name
        paper(1, authors=tuple(Author(f"Author {k}", (f"Lab {k % 97}",)) for k in range(authors))),
        paper(
            2, authors=tuple(Author(f"A {k}", ("Department " + "x" * 1_000 + str(k),)) for k in range(2_000))
        ),
        paper(3, abstract=f"{title}. " + (_HOSTILE_LATEX + " " + FORGED + " ") * 700),  # ~100k characters
        paper(4, title=f"{title} " + _HOSTILE_LATEX * 550),  # a 25k-character title
        paper(5, comment=FORGED * 300, journal_ref=_HOSTILE_LATEX * 500, doi="10.1/" + "x" * 5_000),
        paper(6, categories=("cs.LG", *(f"cs.X{k}" for k in range(5_000)))),
    ]

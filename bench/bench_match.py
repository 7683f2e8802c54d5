"""Fan-out benchmark: Matcher.match_many with the inverted index vs evaluating every topic on every paper.

    python bench/bench_match.py            # 2,000 papers x 10,000 topics (goal: indexed under 2 s)
    python bench/bench_match.py --quick    # 200 papers x 1,000 topics, a few seconds, for smoke tests

Synthetic but shaped like arXiv: a 20k-word vocabulary with Zipf frequencies (short words frequent, as in
English), titles of ~10 words, abstracts of ~150, a few authors, one or two categories. Topics are distinct
1-3 term AND/OR queries over mid- and low-frequency words, some of them phrases taken from real abstracts,
some field-restricted. Brute force is timed on a sample of papers when the whole run would exceed a budget.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from bisect import bisect_left
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.models import Author, Paper
from bot.topics.matcher import Matcher
from bot.topics.query import PaperText, TopicQuery, parse_query

SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + ["tion", "ing", "er", "al", "ic", "ous"]
CATEGORIES = ["cs.LG", "cs.CL", "cs.CV", "cs.AI", "stat.ML", "cs.RO", "math.OC", "quant-ph", "hep-th"]
WHEN = datetime(2026, 11, 20, tzinfo=UTC)
TOPIC_WORDS_FROM_RANK = 300


class Zipf:
    """Draws vocabulary words with probability proportional to 1 / rank**s."""

    def __init__(self, words: list[str], rng: random.Random, s: float = 1.07) -> None:
        self.words = words
        self.rng = rng
        self.cumulative = list(itertools.accumulate(1 / (rank**s) for rank in range(1, len(words) + 1)))

    def rank(self, low: int = 0) -> int:
        floor = self.cumulative[low - 1] if low else 0.0
        x = floor + self.rng.random() * (self.cumulative[-1] - floor)
        return min(bisect_left(self.cumulative, x), len(self.words) - 1)

    def word(self, low: int = 0) -> str:
        return self.words[self.rank(low)]


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 3, 4, 4, 5)))))
    return sorted(words, key=lambda w: (len(w), rng.random()))  # short words take the frequent ranks


def make_papers(zipf: Zipf, rng: random.Random, count: int) -> list[Paper]:
    names = [
        f"{zipf.words[rng.randrange(2000)].title()} {zipf.words[rng.randrange(20000)].title()}"
        for _ in range(3000)
    ]
    papers = []
    for i in range(count):
        title = " ".join(zipf.word() for _ in range(rng.randint(6, 14)))
        abstract = " ".join(zipf.word() for _ in range(rng.randint(110, 190)))
        papers.append(
            Paper(
                arxiv_id=f"2611.{i:05d}",
                version=1,
                title=title,
                abstract=abstract,
                authors=tuple(Author(rng.choice(names)) for _ in range(rng.randint(1, 6))),
                primary_category=rng.choice(CATEGORIES),
                categories=tuple(rng.sample(CATEGORIES, rng.randint(1, 2))),
                published=WHEN,
                updated=WHEN,
            )
        )
    return papers


def make_topics(
    zipf: Zipf, rng: random.Random, papers: list[Paper], count: int
) -> list[tuple[int, TopicQuery]]:
    common = set(zipf.words[:TOPIC_WORDS_FROM_RANK])

    def phrase() -> str:  # two adjacent words of some abstract, past the stopword-like ranks
        while True:
            words = rng.choice(papers).abstract.split()
            start = rng.randrange(len(words) - 1)
            pair = words[start : start + 2]
            if not common.intersection(pair):
                return '"' + " ".join(pair) + '"'

    def term() -> str:
        if rng.random() < 0.2:
            return phrase()
        field = rng.choice(("", "", "", "ti:", "abs:"))
        return field + zipf.word(low=TOPIC_WORDS_FROM_RANK)  # users follow topic words, not "the"

    texts: set[str] = set()
    while len(texts) < count:
        parts = [term() for _ in range(rng.randint(1, 3))]
        text = parts[0]
        for part in parts[1:]:
            text = f"{text} {rng.choice(('AND', 'OR'))} {part}"
        texts.add(text)
    return [(topic_id, parse_query(text)) for topic_id, text in enumerate(sorted(texts))]


def brute_force(topics: list[tuple[int, TopicQuery]], papers: list[Paper]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for paper in papers:
        text = PaperText.of(paper)
        ids = {topic_id for topic_id, query in topics if query.matches(text)}
        if ids:
            out[paper.arxiv_id] = ids
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 papers x 1,000 topics")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds of brute force before sampling")
    args = parser.parse_args()
    n_papers, n_topics = (200, 1_000) if args.quick else (2_000, 10_000)
    rng = random.Random(args.seed)

    started = time.perf_counter()
    zipf = Zipf(vocabulary(rng, 20_000), rng)
    papers = make_papers(zipf, rng, n_papers)
    topics = make_topics(zipf, rng, papers, n_topics)
    print(f"generated {n_papers} papers and {n_topics} topics in {time.perf_counter() - started:.1f} s")

    started = time.perf_counter()
    for paper in papers:
        PaperText.of(paper)
    texts_s = time.perf_counter() - started

    started = time.perf_counter()
    matcher = Matcher(topics)
    build_s = time.perf_counter() - started

    started = time.perf_counter()
    indexed = matcher.match_many(papers)
    indexed_s = time.perf_counter() - started
    evaluated = sum(len(matcher.candidates(PaperText.of(p))) for p in papers) / len(papers)

    sample: list[Paper] = []
    started = time.perf_counter()
    for paper in papers:  # brute force until done or out of budget, then extrapolate per paper
        sample.append(paper)
        brute = brute_force(topics, [paper])
        assert brute.get(paper.arxiv_id, set()) == indexed.get(paper.arxiv_id, set()), paper.arxiv_id
        if time.perf_counter() - started > args.budget:
            break
    brute_s = (time.perf_counter() - started) * len(papers) / len(sample)
    estimated = "" if len(sample) == len(papers) else f" (estimated from {len(sample)} papers)"

    matches = sum(len(ids) for ids in indexed.values())
    print(
        f"\n{matches} matches over {len(indexed)} papers; indexed and brute force agree on {len(sample)} papers"
    )
    print(f"paper texts built once in {texts_s:.2f} s; index built in {build_s:.2f} s\n")
    print("| method | papers x topics | topics evaluated per paper | seconds | vs indexed |")
    print("|---|---|---|---|---|")
    print(f"| inverted index | {n_papers} x {n_topics} | {evaluated:,.0f} | {indexed_s:.2f} | 1x |")
    print(
        f"| brute force{estimated} | {n_papers} x {n_topics} | {len(topics):,} | {brute_s:.2f} "
        f"| {brute_s / indexed_s:,.0f}x |"
    )


if __name__ == "__main__":
    main()

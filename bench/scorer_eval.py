"""How much the learned scorer adds to the queries, measured on labelled real papers it never saw.

The scorer learns from a history; a deployment's is tens of thousands of stored papers, the labelled set has
826. So the evaluation builds a training history from the records of one half of the labelled set (by a hash
of the id: bot.topics.relevance.half_of) plus synthetic filler papers (bench/corpus.py's generator: they only
stand for the bulk of unrelated papers, with the history's base rate), trains every labelled topic's scorer
on it (query matches with the tree rule, that half's labels as examples, the definitions), then reads the
other half only: per topic, recall and precision of the query alone and of the query with suggested matches.

    python -m bot.topics.scorer_eval [--labels DIR] [--catalog FILE] [--train A|B] [--filler N] [--topic NAME]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as `python bench/scorer_eval.py`

from bot.errors import PaperwatchError
from bot.models import Paper
from bot.topics.catalog import CatalogTopic, catalog_hierarchy, find_topic, load_catalog
from bot.topics.query import PaperText
from bot.topics.relevance import DEFAULT_LABELS, HALVES, LabelSet, half_of, load_labels
from bot.topics.scorer import MIN_POSITIVES, Featurizer, ScorerSet, TopicInput, TopicScorer, paper_text
from bot.topics.scorer_features import FeatureFile
from bot.topics.scorer_fit import train_all
from bot.topics.scorer_training import definition_text, labelled_examples

FILLER = 5_000


@dataclass
class Counts:
    positives: int = 0
    negatives: int = 0
    hits: int = 0
    false_hits: int = 0

    def add(self, belongs: bool, hit: bool) -> None:
        if belongs:
            self.positives += 1
            self.hits += hit
        else:
            self.negatives += 1
            self.false_hits += hit

    @property
    def recall(self) -> float | None:
        return self.hits / self.positives if self.positives else None

    @property
    def precision(self) -> float | None:
        matched = self.hits + self.false_hits
        return self.hits / matched if self.negatives and matched else None


@dataclass
class TopicFigures:
    topic: CatalogTopic
    depth: int
    scorer: TopicScorer
    query: Counts
    combined: Counts
    suggested_right: list[Paper]
    suggested_wrong: list[Paper]


def filler_papers(count: int, seed: int = 5) -> list[Paper]:
    if count <= 0:
        return []
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.corpus import Corpus

    return list(Corpus(seed=seed, vocab_size=20_000).papers(count))


def own_matches(catalog: Sequence[CatalogTopic], papers: Sequence[Paper]) -> dict[str, set[str]]:
    """arxiv id -> slugs whose own query matches it."""
    return {p.arxiv_id: {t.slug for t in catalog if t.query.matches(PaperText.of(p))} for p in papers}


def train_catalog(
    catalog: Sequence[CatalogTopic],
    history: Sequence[Paper],
    labels: LabelSet,
    slugs: Sequence[str],
    *,
    seed: int = 0,
    min_positives: int = MIN_POSITIVES,
) -> ScorerSet:
    """Train the scorers of `slugs` on `history` and `labels` (already the training half), as a deployment
    does (bot.topics.scorer_fit.train_all), with the catalog's slugs as keys."""
    tree = catalog_hierarchy(list(catalog))
    texts = [paper_text(p.title, p.abstract) for p in history]
    features = FeatureFile(Featurizer.fit(texts))
    features.add([p.arxiv_id for p in history], texts, len(history))
    direct = own_matches(catalog, history)
    by_slug = {t.slug: t for t in catalog}
    inputs = [
        TopicInput(
            slug,
            by_slug[slug].query.text,
            {key for key, own in direct.items() if slug in tree.closure(own)},
            labelled_examples(labels, tree, slug),
            definition_text(by_slug[slug].name, by_slug[slug].description, by_slug[slug].definition),
        )
        for slug in slugs
    ]
    trained, sampled = train_all(features, inputs, seed=seed, min_positives=min_positives)
    return ScorerSet(features.featurizer, trained, sampled)


def evaluate(
    catalog: Sequence[CatalogTopic],
    labels: LabelSet,
    *,
    train_half: str = "A",
    filler: int = FILLER,
    topics: Sequence[str] | None = None,
    seed: int = 0,
    min_positives: int = MIN_POSITIVES,
) -> list[TopicFigures]:
    tree = catalog_hierarchy(list(catalog))
    train_labels = labels.only(train_half)
    test_half = next(h for h in HALVES if h != train_half)
    test_labels = labels.only(test_half)
    wanted = [t.slug for t in catalog if (topics is None or t.slug in topics)]
    labelled_slugs = {label.slug for label in test_labels.labels}
    wanted = [s for s in wanted if s in labelled_slugs]
    history = [p for key, p in labels.papers.items() if half_of(key) == train_half] + filler_papers(filler)
    scorers = train_catalog(catalog, history, train_labels, wanted, seed=seed, min_positives=min_positives)

    test_papers = [p for key, p in labels.papers.items() if half_of(key) == test_half]
    direct = own_matches(catalog, test_papers)
    features = scorers.featurizer.transform([paper_text(p.title, p.abstract) for p in test_papers])
    row = {p.arxiv_id: i for i, p in enumerate(test_papers)}
    suggested = {slug: scorer.suggests(features) for slug, scorer in scorers.topics.items() if scorer.scored}
    figures: dict[str, TopicFigures] = {}
    by_slug = {t.slug: t for t in catalog}
    for slug in wanted:
        figures[slug] = TopicFigures(
            by_slug[slug], len(tree.ancestors(slug)), scorers.topics[slug], Counts(), Counts(), [], []
        )
    for label in test_labels.labels:
        result = figures.get(label.slug)
        if result is None:
            continue
        exact = label.slug in tree.closure(direct[label.arxiv_id])
        flags = suggested.get(label.slug)
        extra = bool(flags is not None and flags[row[label.arxiv_id]]) and not exact
        result.query.add(label.belongs, exact)
        result.combined.add(label.belongs, exact or extra)
        if extra:
            paper = test_labels.papers[label.arxiv_id]
            (result.suggested_right if label.belongs else result.suggested_wrong).append(paper)
    return list(figures.values())


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def render(figures: Sequence[TopicFigures]) -> str:
    rows = [("topic", "pos", "neg", "scorer", "query R / P", "query+suggested R / P", "suggested +/-")]
    for f in figures:
        rows.append(
            (
                "  " * f.depth + f.topic.name,
                str(f.query.positives),
                str(f.query.negatives),
                "scored" if f.scorer.scored else "query-only",
                f"{_percent(f.query.recall)} / {_percent(f.query.precision)}",
                f"{_percent(f.combined.recall)} / {_percent(f.combined.precision)}",
                f"{len(f.suggested_right)} / {len(f.suggested_wrong)}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )


def render_suggestions(figures: Sequence[TopicFigures]) -> str:
    blocks = []
    for f in figures:
        lines = [f"  right  {p.arxiv_id}  {' '.join(p.title.split())}" for p in f.suggested_right]
        lines += [f"  wrong  {p.arxiv_id}  {' '.join(p.title.split())}" for p in f.suggested_wrong]
        if lines:
            blocks.append("\n".join([f"{f.topic.name}:", *lines]))
    return "\n\n".join(blocks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/scorer_eval.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS, metavar="DIR")
    parser.add_argument(
        "--catalog", type=Path, metavar="FILE", help="a catalog file (default: the packaged one)"
    )
    parser.add_argument("--train", choices=HALVES, default="A", help="the half trained on; the other is read")
    parser.add_argument(
        "--filler", type=int, default=FILLER, help=f"synthetic papers in the history ({FILLER})"
    )
    parser.add_argument("--topic", metavar="NAME", help="only this topic")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--min-positives",
        type=int,
        default=MIN_POSITIVES,
        help=f"positives a topic needs to be scored (default {MIN_POSITIVES}, as deployed)",
    )
    args = parser.parse_args(argv)
    try:
        catalog = load_catalog(args.catalog)
        topics = None
        if args.topic:
            topic = find_topic(catalog, args.topic)
            if topic is None:
                raise PaperwatchError(
                    f"no catalog topic named {args.topic!r}; `python -m bot topics` lists them"
                )
            topics = [topic.slug]
        labels = load_labels(args.labels, catalog)
    except PaperwatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    np.random.seed(args.seed)
    figures = evaluate(
        catalog,
        labels,
        train_half=args.train,
        filler=args.filler,
        topics=topics,
        seed=args.seed,
        min_positives=args.min_positives,
    )
    print(render(figures))
    details = render_suggestions(figures)
    if details:
        print("\nsuggested matches (the query missed them):\n" + details)
    return 0


if __name__ == "__main__":
    sys.exit(main())

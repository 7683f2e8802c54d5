"""Do members' ratings sharpen a topic? Precision and recall on labelled real papers before and after a batch
of simulated ratings, read on papers neither the scorer nor the ratings saw.

As bench/scorer_eval.py: the scorer learns from one half of the labelled records (by a hash of the id) plus
synthetic filler papers, with that half's labels, and the other half is read only. The simulated server follows
each labelled topic and receives, of the training half, what the topic posts (its query's matches and the
scorer's suggestions); its members rate every received paper their label speaks for (👎 on false hits, and
with --up also 👍 on right ones). Those ratings make the server's rating view (bot/topics/scorer_ratings.py,
as the bot builds it at its next retraining), which withholds papers near 👎 ones and lifts papers near 👍
ones. Then, on the read half: what the server receives before (query + suggestions) and after (minus withheld,
plus lifted), against the labels.

The catalog's queries were reviewed against both halves, so they leave few false hits to rate: `--query`
gives the topic (with --topic) the query a server might write for it itself, as its own topic would have.

    python bench/ratings_eval.py [--train A|B] [--filler N] [--topic NAME [--query Q]] [--up]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as `python bench/ratings_eval.py`

from bench.scorer_eval import FILLER, Counts, filler_papers, own_matches, train_catalog
from bot.models import Paper
from bot.topics.catalog import CatalogTopic, catalog_hierarchy, find_topic, load_catalog
from bot.topics.query import parse_query
from bot.topics.relevance import DEFAULT_LABELS, HALVES, LabelSet, half_of, load_labels
from bot.topics.scorer import MIN_POSITIVES, paper_text
from bot.topics.scorer_ratings import ANCHORS, RatedText, RatingView


@dataclass
class RatingFigures:
    topic: CatalogTopic
    depth: int
    down: int = 0  # ratings given on the training half
    up: int = 0
    before: Counts = field(default_factory=Counts)
    after: Counts = field(default_factory=Counts)
    withheld: list[tuple[Paper, bool]] = field(default_factory=list)  # (paper, belongs)
    lifted: list[tuple[Paper, bool]] = field(default_factory=list)


def received(
    papers: Sequence[Paper], slug: str, direct: dict[str, set[str]], suggests: np.ndarray | None, tree: object
) -> list[bool]:
    """Per paper: does a follow of the topic (match: suggested) receive it?"""
    closure = tree.closure  # type: ignore[attr-defined]
    return [
        slug in closure(direct[p.arxiv_id]) or bool(suggests is not None and suggests[i])
        for i, p in enumerate(papers)
    ]


def evaluate(
    catalog: Sequence[CatalogTopic],
    labels: LabelSet,
    *,
    train_half: str = "A",
    filler: int = FILLER,
    topics: Sequence[str] | None = None,
    thumbs_up: bool = False,
    min_positives: int = MIN_POSITIVES,
) -> list[RatingFigures]:
    tree = catalog_hierarchy(list(catalog))
    read_half = next(h for h in HALVES if h != train_half)
    train_labels, read_labels = labels.only(train_half), labels.only(read_half)
    negatives = {label.slug for label in read_labels.labels if not label.belongs}
    wanted = [t.slug for t in catalog if t.slug in negatives and (topics is None or t.slug in topics)]
    history = [p for key, p in labels.papers.items() if half_of(key) == train_half] + filler_papers(filler)
    scorers = train_catalog(catalog, history, train_labels, wanted, min_positives=min_positives)
    featurizer = scorers.featurizer

    halves = {
        half: [p for key, p in labels.papers.items() if half_of(key) == half]
        for half in (train_half, read_half)
    }
    rows = {
        h: featurizer.transform([paper_text(p.title, p.abstract) for p in ps]) for h, ps in halves.items()
    }
    direct = own_matches(catalog, [*halves[train_half], *halves[read_half]])
    by_slug = {t.slug: t for t in catalog}
    figures = []
    for slug in wanted:
        scorer = scorers.topics[slug]
        figure = RatingFigures(by_slug[slug], len(tree.ancestors(slug)))
        verdict = {
            h: {
                label.arxiv_id: label.belongs
                for label in (train_labels if h == train_half else read_labels).labels
                if label.slug == slug
            }
            for h in halves
        }
        # The server's members rate what their channel received of the training half.
        got = received(
            halves[train_half],
            slug,
            direct,
            scorer.suggests(rows[train_half]) if scorer.scored else None,
            tree,
        )
        rated = []
        for paper, came in zip(halves[train_half], got, strict=True):
            belongs = verdict[train_half].get(paper.arxiv_id)
            if not came or belongs is None or (belongs and not thumbs_up):
                continue
            rated.append(RatedText(paper.arxiv_id, paper.title, paper.abstract, 1 if belongs else -1))
            figure.up += belongs
            figure.down += not belongs
        # The papers the channel received and nobody rejected, as the bot samples the topic's matches.
        rejected = {r.arxiv_id for r in rated if r.net < 0}
        kept = [
            (p.title, p.abstract)
            for p, came in zip(halves[train_half], got, strict=True)
            if came and p.arxiv_id not in rejected
        ]
        view = RatingView.build(featurizer, rated, kept[:ANCHORS])
        # What the server receives of the read half, before and after its ratings are learned.
        read = halves[read_half]
        got = received(read, slug, direct, scorer.suggests(rows[read_half]) if scorer.scored else None, tree)
        withheld, lifted = view.verdicts(rows[read_half]) if view else (np.zeros(len(read), bool),) * 2
        for i, paper in enumerate(read):
            belongs = verdict[read_half].get(paper.arxiv_id)
            if belongs is None:
                continue
            after = (got[i] and not withheld[i]) or (lifted[i] and not got[i])
            figure.before.add(belongs, got[i])
            figure.after.add(belongs, after)
            if got[i] and withheld[i]:
                figure.withheld.append((paper, belongs))
            if lifted[i] and not got[i]:
                figure.lifted.append((paper, belongs))
        figures.append(figure)
    return figures


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def render(figures: Sequence[RatingFigures]) -> str:
    rows = [
        (
            "topic",
            "pos",
            "neg",
            "ratings 👎 / 👍",
            "before R / P",
            "after R / P",
            "withheld +/-",
            "lifted +/-",
        )
    ]
    for f in figures:
        rows.append(
            (
                "  " * f.depth + f.topic.name,
                str(f.before.positives),
                str(f.before.negatives),
                f"{f.down} / {f.up}",
                f"{_percent(f.before.recall)} / {_percent(f.before.precision)}",
                f"{_percent(f.after.recall)} / {_percent(f.after.precision)}",
                f"{sum(b for _, b in f.withheld)} / {sum(not b for _, b in f.withheld)}",
                f"{sum(b for _, b in f.lifted)} / {sum(not b for _, b in f.lifted)}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/ratings_eval.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS, metavar="DIR")
    parser.add_argument("--train", choices=HALVES, default="A", help="the half rated and trained on")
    parser.add_argument(
        "--filler", type=int, default=FILLER, help=f"synthetic papers in the history ({FILLER})"
    )
    parser.add_argument("--topic", metavar="NAME", help="only this topic")
    parser.add_argument("--up", action="store_true", help="members also 👍 the right papers they receive")
    parser.add_argument("--query", help="with --topic: the topic's query replaced by this one")
    args = parser.parse_args(argv)
    catalog = load_catalog()
    topics = None
    if args.query and not args.topic:
        parser.error("--query needs --topic")
    if args.topic:
        topic = find_topic(catalog, args.topic)
        if topic is None:
            print(f"error: no catalog topic named {args.topic!r}", file=sys.stderr)
            return 2
        topics = [topic.slug]
        if args.query:
            catalog = [
                dataclasses.replace(t, query=parse_query(args.query)) if t is topic else t for t in catalog
            ]
    figures = evaluate(
        catalog,
        load_labels(args.labels, catalog),
        train_half=args.train,
        filler=args.filler,
        topics=topics,
        thumbs_up=args.up,
    )
    print(render(figures))
    for f in figures:
        changed = [("withheld", p, b) for p, b in f.withheld] + [("lifted", p, b) for p, b in f.lifted]
        for what, p, b in changed:
            print(
                f"  {f.topic.name}: {what} {'right' if (b != (what == 'withheld')) else 'wrong'}  {p.arxiv_id}  {' '.join(p.title.split())[:90]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

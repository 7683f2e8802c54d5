"""How well the catalog's topics catch what their field means: recall and precision on hand-labelled papers.

A labels folder holds `records.jsonl` (one arXiv record per line: id, title, abstract, authors, categories,
primary_category, published) and `labels.csv` (`arxiv_id,topic,label,note`; label 1 = belongs, 0 = does not).
Each topic is evaluated with the hierarchy's rule (bot.topic_tree): a paper matches a topic when the
topic's own query or a descendant's matches it, which is what a follower of the topic receives.

`python -m bot.topics.relevance [--labels DIR] [--topic NAME] [--half A|B]` prints the table, then every miss
and false hit, so a maintainer reviews the catalog the way one reads a failing test. `--half` evaluates one of
two fixed halves of the records (by a hash of the id): tune queries on A, read the honest figures on B.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bot.errors import PaperwatchError
from bot.models import Author, Paper
from bot.topics.catalog import CatalogTopic, catalog_hierarchy, find_topic, load_catalog
from bot.topics.query import PaperText

DEFAULT_LABELS = Path(__file__).parent / "labels"
RECORDS_FILE = "records.jsonl"
LABELS_FILE = "labels.csv"
LABELS_HEADER = ("arxiv_id", "topic", "label", "note")
HALVES = ("A", "B")
_UNDATED = datetime(2000, 1, 1, tzinfo=UTC)  # matching never reads dates; a record may have none


class LabelsError(PaperwatchError):
    """A labels folder that cannot be read as labelled data; the message names the file and the line."""


@dataclass(frozen=True)
class Label:
    arxiv_id: str
    slug: str
    belongs: bool
    note: str
    line: int


@dataclass(frozen=True)
class LabelSet:
    papers: dict[str, Paper]  # by arXiv id, in file order
    labels: list[Label]

    def only(self, half: str | None) -> LabelSet:
        """The labels of one half of the records (see `half_of`), or all of them for None."""
        if half is None:
            return self
        return LabelSet(self.papers, [label for label in self.labels if half_of(label.arxiv_id) == half])


@dataclass
class TopicResult:
    topic: CatalogTopic
    depth: int
    misses: list[Paper] = field(default_factory=list)  # labelled 1, not matched
    false_hits: list[Paper] = field(default_factory=list)  # labelled 0, matched
    positives: int = 0
    negatives: int = 0

    @property
    def hits(self) -> int:
        return self.positives - len(self.misses)

    @property
    def recall(self) -> float | None:
        return self.hits / self.positives if self.positives else None

    @property
    def precision(self) -> float | None:
        """None when no negatives are labelled (then false hits cannot be seen) or nothing matched."""
        matched = self.hits + len(self.false_hits)
        return self.hits / matched if self.negatives and matched else None


def half_of(arxiv_id: str) -> str:
    """ "A" or "B", fixed by the id alone, so a record never changes half as the set grows."""
    return HALVES[hashlib.sha256(arxiv_id.encode()).digest()[0] & 1]


# --- loading ---------------------------------------------------------------------------------------------


def load_labels(directory: Path, catalog: Sequence[CatalogTopic]) -> LabelSet:
    """Read a labels folder. Raises LabelsError naming the file and line of the first malformed record or row,
    an unknown record id or topic, or a (record, topic) pair labelled twice."""
    papers = _load_records(directory / RECORDS_FILE)
    return LabelSet(papers, _load_rows(directory / LABELS_FILE, papers, catalog))


def _load_records(path: Path) -> dict[str, Paper]:
    papers: dict[str, Paper] = {}
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LabelsError(f"{where}: not a JSON object: {exc.msg}") from None
        paper = _paper(record, where)
        if paper.arxiv_id in papers:
            raise LabelsError(f"{where}: record {paper.arxiv_id} appears twice")
        papers[paper.arxiv_id] = paper
    return papers


def _paper(record: object, where: str) -> Paper:
    if not isinstance(record, dict):
        raise LabelsError(f"{where}: not a JSON object")
    for key in ("id", "title", "abstract"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise LabelsError(f"{where}: field {key!r} is missing or not a non-empty string")
    authors, categories = record.get("authors", []), record.get("categories", [])
    for key, value in (("authors", authors), ("categories", categories)):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise LabelsError(f"{where}: field {key!r} must be a list of strings")
    primary = record.get("primary_category") or (categories[0] if categories else "")
    published = _date(record.get("published"), where)
    return Paper(
        arxiv_id=record["id"].strip(),
        version=1,
        title=record["title"],
        abstract=record["abstract"],
        authors=tuple(Author(name) for name in authors),
        primary_category=str(primary),
        categories=tuple(categories),
        published=published,
        updated=published,
    )


def _date(value: object, where: str) -> datetime:
    if value is None:
        return _UNDATED
    try:
        return datetime.strptime(str(value), "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise LabelsError(f"{where}: 'published' must be YYYY-MM-DD or null, not {value!r}") from None


def _load_rows(path: Path, papers: dict[str, Paper], catalog: Sequence[CatalogTopic]) -> list[Label]:
    rows = csv.reader(_lines(path))
    header = next(rows, None)
    if header is None or tuple(header) != LABELS_HEADER:
        raise LabelsError(f"{path}: line 1: the header must be {','.join(LABELS_HEADER)}")
    labels: list[Label] = []
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        number = rows.line_num
        where = f"{path}: line {number}"
        if not row:
            continue
        if len(row) != len(LABELS_HEADER):
            raise LabelsError(f"{where}: expected 4 columns ({','.join(LABELS_HEADER)}), found {len(row)}")
        arxiv_id, name, value, note = (cell.strip() for cell in row)
        if arxiv_id not in papers:
            raise LabelsError(f"{where}: record {arxiv_id!r} is not in {RECORDS_FILE}")
        topic = find_topic(list(catalog), name)
        if topic is None:
            raise LabelsError(
                f"{where}: unknown topic {name!r}: label a topic of the catalog, by name or slug"
            )
        if value not in ("0", "1"):
            raise LabelsError(f"{where}: label must be 1 (belongs) or 0 (does not), not {value!r}")
        earlier = seen.setdefault((arxiv_id, topic.slug), number)
        if earlier != number:
            raise LabelsError(
                f"{where}: {arxiv_id} is labelled for {topic.name!r} again (first on line {earlier})"
            )
        labels.append(Label(arxiv_id, topic.slug, value == "1", note, number))
    return labels


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelsError(f"{path}: cannot read the labels: {exc}") from None


# --- evaluating ------------------------------------------------------------------------------------------


def evaluate(
    labels: LabelSet, catalog: Sequence[CatalogTopic], topics: Iterable[str] | None = None
) -> list[TopicResult]:
    """Per-topic results (catalog order) for every labelled topic, or for the given slugs only."""
    tree = catalog_hierarchy(list(catalog))
    wanted = {label.slug for label in labels.labels} if topics is None else set(topics)
    results = {t.slug: TopicResult(t, len(tree.ancestors(t.slug))) for t in catalog if t.slug in wanted}
    matched: dict[str, set[str]] = {}
    for label in labels.labels:
        result = results.get(label.slug)
        if result is None:
            continue
        if label.arxiv_id not in matched:
            text = PaperText.of(labels.papers[label.arxiv_id])
            matched[label.arxiv_id] = tree.closure(t.slug for t in catalog if t.query.matches(text))
        hit = label.slug in matched[label.arxiv_id]
        paper = labels.papers[label.arxiv_id]
        if label.belongs:
            result.positives += 1
            if not hit:
                result.misses.append(paper)
        else:
            result.negatives += 1
            if hit:
                result.false_hits.append(paper)
    return list(results.values())


# --- the report ------------------------------------------------------------------------------------------


def render_table(results: Sequence[TopicResult]) -> str:
    rows = [("topic", "pos", "neg", "hits", "false hits", "recall", "precision")]
    for r in results:
        name = "  " * r.depth + r.topic.name
        rows.append(
            (name, str(r.positives), str(r.negatives), str(r.hits), str(len(r.false_hits)),
             _percent(r.recall), _percent(r.precision))
        )  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    return "\n".join(lines)


def render_errors(results: Sequence[TopicResult]) -> str:
    blocks: list[str] = []
    for r in results:
        if not r.misses and not r.false_hits:
            continue
        lines = [f"{r.topic.name}:"]
        lines += [f"  miss       {p.arxiv_id}  {_one_line(p.title)}" for p in r.misses]
        lines += [f"  false hit  {p.arxiv_id}  {_one_line(p.title)}" for p in r.false_hits]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bot.topics.relevance",
        description="Per-topic recall and precision of the catalog on a labelled folder, with every miss "
        "and false hit. Precision is n/a for a topic with no labelled negatives.",
    )
    parser.add_argument(
        "--labels",
        type=Path,
        default=DEFAULT_LABELS,
        metavar="DIR",
        help=f"folder with {RECORDS_FILE} and {LABELS_FILE} (default: the packaged set)",
    )
    parser.add_argument("--topic", metavar="NAME", help="only this catalog topic (name or slug)")
    parser.add_argument(
        "--half", choices=HALVES, help="only one fixed half of the records: tune on A, check on B"
    )
    parser.add_argument(
        "--catalog", type=Path, metavar="FILE", help="a catalog file (default: the packaged one)"
    )
    args = parser.parse_args(argv)
    try:
        catalog = load_catalog(args.catalog)
        topics = None
        if args.topic is not None:
            topic = find_topic(catalog, args.topic)
            if topic is None:
                raise PaperwatchError(
                    f"no catalog topic named {args.topic!r}; `python -m bot topics` lists them"
                )
            topics = [topic.slug]
        results = evaluate(load_labels(args.labels, catalog).only(args.half), catalog, topics)
    except PaperwatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render_table(results))
    errors = render_errors(results)
    if errors:
        print()
        print(errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`relevance`: how well the catalog's topics catch what their field means, on hand-labelled papers (per-topic
recall and precision, then every miss and false hit). It reads no settings and no database, only the catalog
and a labels folder (bot/topics/relevance.py), so it runs on any checkout."""

from __future__ import annotations

from pathlib import Path

from bot.cli.parser import program_name
from bot.errors import PaperwatchError
from bot.topics.catalog import find_topic, load_catalog
from bot.topics.relevance import evaluate, load_labels, render_errors, render_table


def cmd_relevance(labels: Path, topic: str | None, half: str | None) -> int:
    catalog = load_catalog()
    slugs = None
    if topic is not None:
        found = find_topic(catalog, topic)
        if found is None:
            raise PaperwatchError(f"no catalog topic named {topic!r}; `{program_name()} topics` lists them")
        slugs = [found.slug]
    results = evaluate(load_labels(labels, catalog).only(half), catalog, slugs)
    if not any(r.positives or r.negatives for r in results):
        what = repr(topic) if topic is not None else "any topic"
        raise PaperwatchError(f"{labels}: no labelled papers for {what}: label some in labels.csv first")
    print(render_table(results))
    errors = render_errors(results)
    if errors:
        print(f"\n{errors}")
    return 0

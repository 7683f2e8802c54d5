"""Parse one 2,000-entry arXiv API page with parse_feed (lxml) and with feedparser, side by side in one run.

The page is built from the 100 recorded entries of api_query_testing_100.xml, copied round-robin with fresh
ids, so it has arXiv's real shape and text (~4.7 MB). Goal: lxml < 0.3 s and >= 8x faster than feedparser.

    python bench/bench_parse.py            # 2,000 entries, 5 repetitions each
    python bench/bench_parse.py --quick    # 300 entries, 2 repetitions each
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import feedparser
from lxml import etree

from bot.demo.corpus import corpus_bytes
from bot.sources.arxiv_api import ATOM_NS, OPENSEARCH_NS, parse_feed

GOAL_SECONDS = 0.3
GOAL_RATIO = 8.0


def build_page(entries: int) -> bytes:
    """A page of `entries` real entries with fresh new-style ids (2601.00000v1, ...) and matching counts."""
    root = etree.fromstring(corpus_bytes())  # the recorded api_query_testing_100.xml
    recorded = root.findall(f"{{{ATOM_NS}}}entry")
    for entry in recorded:
        root.remove(entry)
    for i in range(entries):
        entry = copy.deepcopy(recorded[i % len(recorded)])
        old_id = entry.findtext(f"{{{ATOM_NS}}}id").rsplit("/abs/", 1)[1]
        new_id = f"2601.{i:05d}v1"
        entry.find(f"{{{ATOM_NS}}}id").text = f"http://arxiv.org/abs/{new_id}"
        for link in entry.iterfind(f"{{{ATOM_NS}}}link"):
            link.set("href", link.get("href", "").replace(old_id, new_id))
        root.append(entry)
    root.find(f"{{{OPENSEARCH_NS}}}itemsPerPage").text = str(entries)
    root.find(f"{{{OPENSEARCH_NS}}}totalResults").text = str(entries)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def timed(fn: Callable[[], int], reps: int, expected: int) -> list[float]:
    """Seconds per repetition; each run must see every entry, so neither side gets away with less work."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        count = fn()
        times.append(time.perf_counter() - start)
        if count != expected:
            raise SystemExit(f"parsed {count} entries, expected {expected}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="300 entries, 2 repetitions")
    parser.add_argument("--entries", type=int, help="entries on the page (default 2000)")
    parser.add_argument("--reps", type=int, help="repetitions of each parser (default 5)")
    args = parser.parse_args()
    entries = args.entries or (300 if args.quick else 2000)
    reps = args.reps or (2 if args.quick else 5)

    data = build_page(entries)
    lxml_times = timed(lambda: len(parse_feed(data).papers), reps, entries)
    fp_times = timed(lambda: len(feedparser.parse(data).entries), reps, entries)
    lxml_s, fp_s = statistics.median(lxml_times), statistics.median(fp_times)

    print(
        f"Median of {reps} runs each (best: lxml {min(lxml_times):.3f} s, feedparser {min(fp_times):.3f} s).\n"
    )
    print("| entries | bytes | lxml s | feedparser s | ratio |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {entries:,} | {len(data):,} | {lxml_s:.3f} | {fp_s:.3f} | {fp_s / lxml_s:.1f}x |")
    if entries == 2000:
        verdict = "met" if lxml_s < GOAL_SECONDS and fp_s / lxml_s >= GOAL_RATIO else "NOT met"
        print(f"\nGoal (lxml < {GOAL_SECONDS} s, >= {GOAL_RATIO:.0f}x feedparser): {verdict}")


if __name__ == "__main__":
    main()

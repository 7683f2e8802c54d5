"""A card's buttons at scale: p50 / p95 of a click's work at 1M stored papers, beside /paper's, in one run.

    python bench/bench_cards.py --papers 100000      # history built once into bench/out/ (shared with
    python bench/bench_cards.py                      # bench_history.py), 1,000,000 papers by default

Times what each click asks of the services (the store, the features), as the cogs call them, on random stored
papers: /paper (the stored paper, the topics this server sees it in, its card rendered), 👍 / 👎 (which
followed topics hold the paper, the vote upserted), ⭐ Save, and Similar (the paper's telling words, the
bounded full-text candidate set, their features compared, the answer rendered). Discord's round trip is not
in it: a click must be answered within 3 s; the goal for this work is <= 200 ms at p95.

Similar uses the learned scorer's featurizer; here it is fitted on the first 50,000 stored papers, as the
scorer's first training does (training every topic is bench_scorer.py's)."""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_history import NOW_SECONDS, OUT, build
from bot.clock import FakeClock
from bot.render import paper_compact_line, paper_embed
from bot.services.history import HistoryService
from bot.services.ratings import RatingService
from bot.services.saved import SavedService
from bot.services.similar import SimilarService
from bot.topics.index import TopicIndex
from bot.topics.query import parse_query
from bot.topics.scorer import Featurizer, ScorerSet, paper_text
from bot.topics.scorer_training import IDF_SAMPLE, LearnedScorer

GUILD, CHANNEL, MEMBERS = 7, 70, 50


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def timed(calls: list[Callable[[], Awaitable[object]]]) -> list[float]:
    spent = []
    for call in calls:
        began = time.perf_counter()
        await call()
        spent.append((time.perf_counter() - began) * 1000)
    return spent


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200, help="clicks of each kind to time")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    clock = FakeClock(datetime.fromtimestamp(NOW_SECONDS, UTC))
    store = await build(OUT / f"history-{args.papers}.sqlite3", args.papers, clock)
    rng = random.Random(5)

    # A server following one topic in one channel; the topic holds the papers the clicks rate.
    row, _ = await store.topics.save(
        guild_id=GUILD,
        slug="bench-cards",
        name="Bench cards",
        description="",
        query="ti:bench",
        at=clock.now(),
    )
    await store.follows.upsert(
        guild_id=GUILD,
        channel_id=CHANNEL,
        topic_id=row.id,
        mode="each",
        digest_hour=8,
        created_by=None,
        at=clock.now(),
    )
    count = await store.papers.count()
    picks = rng.sample(range(1, count + 1), args.runs)
    rows = await store.db.fetchall(
        f"SELECT arxiv_id FROM papers WHERE pk IN ({','.join('?' * len(picks))})", picks
    )
    ids = [r[0] for r in rows]
    await store.topics.add_matches([(row.id, arxiv_id) for arxiv_id in ids], clock.now())

    began = time.perf_counter()
    texts: list[str] = []
    async for batch in store.papers.texts(batch=5000):
        texts.extend(paper_text(title, abstract) for _, _, title, abstract in batch)
        if len(texts) >= IDF_SAMPLE:
            break
    learned = LearnedScorer(store, None)
    learned.scorers = ScorerSet(await asyncio.to_thread(Featurizer.fit, texts[:IDF_SAMPLE]))
    print(f"{count:,} papers; featurizer fitted in {time.perf_counter() - began:.1f} s")

    index = TopicIndex(store, clock)
    await index.start([])
    index.register(row, parse_query(row.query))
    history = HistoryService(store, index, None, None)  # type: ignore[arg-type]  # no arXiv: stored papers only
    ratings, saved, similar = (
        RatingService(store, clock),
        SavedService(store, clock),
        SimilarService(store, learned),
    )

    async def paper_card(arxiv_id: str) -> object:
        paper = await history.stored(arxiv_id)
        assert paper is not None
        return paper_embed(paper, topics=await history.topic_names(GUILD, paper))

    async def similar_answer(arxiv_id: str) -> object:
        found = await similar.similar(arxiv_id)
        return [paper_compact_line(p) for p, _ in found.nearest]

    votes = [1, -1]
    results = {
        "/paper (stored paper, its topics, the card)": await timed([lambda a=a: paper_card(a) for a in ids]),
        "👍 / 👎 (a vote, first or changed)": await timed(
            [
                lambda a=a, i=i: ratings.rate(
                    guild_id=GUILD,
                    channel_ids=[CHANNEL],
                    member_id=i % MEMBERS,
                    arxiv_id=a,
                    vote=votes[i % 2],
                )
                for i, a in enumerate(ids)
            ]
        ),
        "⭐ Save": await timed([lambda a=a, i=i: saved.save(i % MEMBERS, a) for i, a in enumerate(ids)]),
        "Similar (5 nearest of 100 candidates)": await timed([lambda a=a: similar_answer(a) for a in ids]),
    }
    found = [len((await similar.similar(a)).nearest) for a in ids[:20]]
    print(f"Similar found {statistics.mean(found):.1f} papers on average (of 5) for 20 of them\n")
    print(f"| click, {count:,} stored papers, {args.runs} runs | p50 | p95 | max |")
    print("|---|---|---|---|")
    for name, spent in results.items():
        print(
            f"| {name} | {percentile(spent, 0.5):.1f} ms | **{percentile(spent, 0.95):.1f} ms** | {max(spent):.1f} ms |"
        )
    await store.topics.delete(row.id)  # the store is shared with the other benchmarks
    await store.db.execute("DELETE FROM saved_papers")
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())

"""The store's reads for /ask and /brief, on a real SQLite file: bounded word counts and window samples."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import FakeClock
from bot.store import SqliteStore
from tests.factories import BASE_TIME, make_paper


async def test_papers_holding_counts_each_word_as_the_index_stems_it_up_to_the_cap(
    store: SqliteStore, clock: FakeClock
) -> None:
    papers = [make_paper(i, title=f"Models of ferrets {i}" if i < 5 else f"A model {i}") for i in range(8)]
    await store.papers.upsert(papers, seen_at=clock.now())
    counts = await store.search.papers_holding(["ferrets", "models", "okapi"], cap=100)
    assert counts == {"ferrets": 5, "models": 8, "okapi": 0}  # "models" and "model" share a stem
    assert await store.search.papers_holding(["models"], cap=3) == {"models": 3}


async def test_in_window_samples_a_topics_papers_across_the_whole_window(
    store: SqliteStore, clock: FakeClock
) -> None:
    papers = [
        make_paper(i, title=f"Ferret study {i}", published=BASE_TIME - timedelta(hours=i)) for i in range(60)
    ]
    await store.papers.upsert(papers, seen_at=clock.now())
    topic, _ = await store.topics.save(
        guild_id=0, slug="ferrets", name="Ferrets", description="", query="ti:ferret", at=clock.now()
    )
    await store.topics.add_matches([(topic.id, p.arxiv_id) for p in papers[:50]], clock.now())
    start, end = BASE_TIME - timedelta(hours=40), BASE_TIME - timedelta(hours=5)
    everything = await store.search.in_window(topic_id=topic.id, start=start, end=end, limit=100)
    assert sorted(p.arxiv_id for p in everything) == sorted(p.arxiv_id for p in papers[6:41])
    sample = await store.search.in_window(topic_id=topic.id, start=start, end=end, limit=10)
    assert len(sample) == 10 and {p.arxiv_id for p in sample} <= {p.arxiv_id for p in everything}
    hours = sorted((BASE_TIME - p.published) // timedelta(hours=1) for p in sample)
    assert hours[0] < 15 and hours[-1] > 30  # spread over the window, not its newest ten
    assert sample == await store.search.in_window(topic_id=topic.id, start=start, end=end, limit=10)

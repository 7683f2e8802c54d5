"""The catalog's queries read through a real store: the full-text prefilter of every packaged topic (some longer
than a server's own query may be) loses none of the labelled papers its query matches, on both back ends; and a
catalog topic with a long query that a later release drops still loads from the store at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.clock import FakeClock
from bot.store import Store
from bot.topics.catalog import CATALOG_QUERY_LENGTH, load_catalog
from bot.topics.index import TopicIndex
from bot.topics.query import MAX_QUERY_LENGTH
from bot.topics.relevance import DEFAULT_LABELS, load_labels


@pytest.mark.both_back_ends
async def test_every_packaged_query_finds_its_labelled_matches_through_the_prefilter(
    store: Store, clock: FakeClock
) -> None:
    catalog = load_catalog()
    papers = list(load_labels(DEFAULT_LABELS, catalog).papers.values())
    await store.papers.upsert(papers, seen_at=clock.now())
    index = TopicIndex(store, clock)
    longest = max(catalog, key=lambda t: len(t.query.text))
    assert len(longest.query.text) > MAX_QUERY_LENGTH  # the room is used: this test reads such a query
    for topic in catalog:
        expected = {p.arxiv_id for p in papers if topic.query.matches(p)}
        found = {p.arxiv_id async for batch in index.history(topic.query) for p in batch}
        assert found == expected, topic.slug


def catalog_file(tmp_path: Path, query: str) -> Path:
    path = tmp_path / "catalog.toml"
    path.write_text(
        f"""
[[topic]]
slug = "kept"
name = "Kept"
description = "Stays."
definition = "Stays. Out: nothing."
query = 'ti:kept'

[[topic]]
slug = "long"
name = "Long"
description = "A long query."
definition = "Many phrases. Out: the rest."
query = '''{query}'''
""",
        encoding="utf-8",
    )
    return path


async def test_a_long_catalog_query_is_read_back_from_the_store_once_the_topic_left_the_catalog(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    words = " OR ".join(f'"reward phrase {n}"' for n in range(60))
    assert MAX_QUERY_LENGTH < len(words) <= CATALOG_QUERY_LENGTH
    release = load_catalog(catalog_file(tmp_path, words))
    await TopicIndex(store, clock).start(release)
    later = TopicIndex(store, clock)
    await later.start([t for t in release if t.slug == "kept"])  # the next release drops "long"
    gone = await store.topics.find(0, "long")
    assert gone is not None
    query = later.query(gone.id)
    assert query is not None and query.text == release[1].query.text

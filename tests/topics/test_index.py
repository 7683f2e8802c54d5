"""The topic index: the catalog synced at start, new papers matched in their transaction, a topic's history
matched off the event loop, and legacy topic rows re-keyed."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.clock import FakeClock
from bot.models import Paper
from bot.services.topics import TopicService
from bot.store import SqliteStore, Store
from bot.store.database import bundled_migrations
from bot.topics.catalog import CatalogError, CatalogTopic, find_topic, load_catalog
from bot.topics.index import MATCH_SLICE, TopicIndex
from bot.topics.query import parse_query
from tests.factories import BASE_TIME, GRPO, ROBOT, make_paper, rl_paper


async def test_catalog_topics_match_the_stored_history_at_start(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    catalog = load_catalog()
    await TopicIndex(store, clock).start(catalog)
    grpo = await store.topics.find(0, "Group Relative Policy Optimization")
    assert grpo is not None
    assert [p.arxiv_id for p in await store.topics.latest_papers(grpo.id, 10)] == [GRPO.arxiv_id]
    assert len(await store.topics.all()) == len(catalog)
    # starting again changes nothing and matches nothing twice
    await TopicIndex(store, clock).start(catalog)
    assert (
        await store.topics.count_matches(grpo.id, GRPO.published, GRPO.published + timedelta(seconds=1)) == 1
    )


async def test_new_papers_are_matched_inside_their_transaction(store: Store, clock: FakeClock) -> None:
    index = TopicIndex(store, clock)
    catalog = load_catalog()
    await index.start([t for t in catalog if t.name in ("RL Post-Training", "Robot Learning")])
    async with store.transaction():
        result = await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
        matches = await index.record_matches(result, [GRPO, ROBOT])
    rl = await store.topics.find(0, "rl-post-training")
    assert rl is not None and rl.id in matches.topics[GRPO.arxiv_id]
    assert rl.id not in matches.topics.get(ROBOT.arxiv_id, set())
    assert find_topic(catalog, "RL Post-Training") is not None


async def test_a_large_page_is_matched_a_slice_at_a_time_with_commands_in_between(
    store: Store, clock: FakeClock
) -> None:
    """Matching runs on the event loop: between two slices another task (a command) must get its turn."""
    index = TopicIndex(store, clock)
    await index.start([t for t in load_catalog() if t.name == "RL Post-Training"])
    papers = [rl_paper(n) for n in range(1, 3 * MATCH_SLICE + 2)]
    events: list[str] = []
    match_many = index.matcher.match_many

    def recording(batch: Any) -> dict[str, set[int]]:
        batch = list(batch)
        events.append(f"slice of {len(batch)}")
        return match_many(batch)

    index.matcher.match_many = recording  # type: ignore[method-assign]
    stop = asyncio.Event()

    async def command() -> None:
        while not stop.is_set():
            if events and events[-1] != "command":
                events.append("command")
            await asyncio.sleep(0)

    other = asyncio.create_task(command())
    async with store.transaction():
        result = await store.papers.upsert(papers, seen_at=clock.now())
        matches = await index.record_matches(result, papers)
    stop.set()
    await other
    slices = [e for e in events if e.startswith("slice")]
    assert slices == [f"slice of {MATCH_SLICE}"] * 3 + ["slice of 1"]
    # the command ran after every slice but the last, before the next one began
    assert events[: 2 * len(slices) - 1] == [e for s in slices[:-1] for e in (s, "command")] + [slices[-1]]
    assert set(matches.topics) == {p.arxiv_id for p in papers}


# ---- legacy rows re-keyed at start ------------------------------------------------------------------------


def legacy_database(path: Path, topics: list[tuple[int, str, str, str]]) -> None:
    """A database as the last release left it (migrations before 0007), holding `topics` rows
    (guild_id, slug, name, query) with the slugs that release gave them."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    for version, name, sql in bundled_migrations():
        if version < 7:
            conn.executescript(sql)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    conn.executemany(
        "INSERT INTO topics (guild_id, slug, name, query, created_at, updated_at) VALUES (?, ?, ?, ?, 0, 0)",
        topics,
    )
    conn.commit()
    conn.close()


async def test_migration_gives_legacy_topics_their_unicode_keys(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "legacy.sqlite3"
    legacy_database(
        path,
        [
            (9, "topic", "量子", "ti:quantum"),  # what the ASCII-only slug made of any CJK name
            (9, "metodos-opticos", "Métodos ópticos", "ti:optics"),
            (9, "graph-theory", "Graph Theory", "ti:graph"),  # ASCII: its key is its old slug
            (9, "strasse", "Strasse", "ti:road"),
            (9, "strae", "Straße", "ti:street"),  # its new key, strasse, is taken: stays reachable by name
        ],
    )
    async with await SqliteStore.open(path, clock) as store:
        index = TopicIndex(store, clock)
        await index.start([])
        service = TopicService(store, index, clock)
        slugs = {t.name: t.slug for t in await store.topics.own(9)}
        assert slugs["量子"] == "量子" and slugs["Métodos ópticos"] == "métodos-ópticos"
        assert slugs["Graph Theory"] == "graph-theory" and slugs["Strasse"] == "strasse"
        assert slugs["Straße"].startswith("strasse-")
        assert (await service.find(9, "Straße")).query == "ti:street"  # type: ignore[union-attr]
        # a new name that the old slug "topic" would have swallowed is its own topic now
        topic, _ = await service.save_custom(9, "Topic", "ti:topics")
        robot, _ = await service.save_custom(9, "ロボット", "ti:robot")
        assert {topic.slug, robot.slug} == {"topic", "ロボット"}
        assert (await service.find(9, "量子")).query == "ti:quantum"  # type: ignore[union-attr]
        await TopicIndex(store, clock).start([])  # the queue is done: a second start changes nothing
        assert {t.name: t.slug for t in await store.topics.own(9)} == {
            **slugs,
            "Topic": "topic",
            "ロボット": "ロボット",
        }


# ---- the history match runs off the event loop ---------------------------------------------------------------


def crowd(n: int, start: int = 5000) -> list[Paper]:
    """Papers whose titles share a prefix ("kalman"/"lorentz"...) and a word ("common")."""
    words = ["kalman", "karma", "lorentz", "logic"]
    return [
        make_paper(start + i, title=f"{words[i % 4]} filters and common things {i}", abstract="We study it.")
        for i in range(n)
    ]


class RecordingExecutor(ThreadPoolExecutor):
    """The loop's default executor (what asyncio.to_thread uses), noting the threads its work ran on."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.threads: list[int] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        def run() -> Any:
            self.threads.append(threading.get_ident())
            return fn(*args, **kwargs)

        return super().submit(run)


async def test_matching_a_history_evaluates_in_worker_threads_batch_by_batch(
    store: Store, clock: FakeClock
) -> None:
    papers = crowd(2500)
    await store.papers.upsert(papers, seen_at=clock.now())
    executor = RecordingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    index = TopicIndex(store, clock)
    query = parse_query("ti:filters ANDNOT ti:karma")
    row = await store.topics.create(
        guild_id=1, name="Filters", description="", query=query.text, at=clock.now()
    )
    matched = await index.match_history(row.id, query)
    assert matched == 2500 - 625
    assert len(executor.threads) >= 3  # one trip per batch of 1,000 candidates
    assert threading.get_ident() not in executor.threads


async def test_a_history_match_of_a_query_the_topic_no_longer_has_adds_nothing(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert(crowd(2500), seen_at=clock.now())
    index = TopicIndex(store, clock)
    service = TopicService(store, index, clock)
    topic, _ = await service.save_custom(1, "Filters", "ti:kalman")
    stale = parse_query("ti:filters")  # e.g. a match still running when /follow gave the topic a new query
    assert await index.match_history(topic.id, stale) == 0
    assert len(await store.topics.latest_papers(topic.id, 1000)) == 625
    await service.delete_custom(topic)  # e.g. /unfollow deleting it while a match still runs
    assert await index.match_history(topic.id, parse_query("ti:kalman")) == 0


# ---- the tree: a paper matching a child is stored for every ancestor -------------------------------------------


def catalog_topic(slug: str, query: str, parent: str | None = None) -> CatalogTopic:
    return CatalogTopic(slug, slug.title(), f"{slug} papers", parse_query(query), parent=parent)


ZEBRA = make_paper(31, title="Zebra stripes and heat", abstract="Stripes cool zebras.")
OKAPI = make_paper(32, title="Okapi diets", abstract="What okapis eat.")
GAIT = make_paper(33, title="Okapi gait analysis", abstract="How okapis walk.")
GIRAFFE = make_paper(34, title="Giraffe necks", abstract="Why necks grew.")


async def held(store: Store, slug: str) -> set[str]:
    """Ids of the papers a catalog topic holds (its own matches and its descendants')."""
    topic = await store.topics.find(0, slug)
    assert topic is not None
    return {p.arxiv_id for p in await store.topics.latest_papers(topic.id, 100)}


async def test_the_closure_is_stored_and_follows_a_catalog_child_that_changes_or_moves(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert([ZEBRA, OKAPI, GAIT, GIRAFFE], seen_at=clock.now())
    release = [
        catalog_topic("animals", "ti:zebra"),
        catalog_topic("okapis", "ti:okapi", parent="animals"),
        catalog_topic("gaits", "ti:gait", parent="okapis"),
    ]
    await TopicIndex(store, clock).start(release)
    assert await held(store, "animals") == {ZEBRA.arxiv_id, OKAPI.arxiv_id, GAIT.arxiv_id}
    assert await held(store, "okapis") == {OKAPI.arxiv_id, GAIT.arxiv_id}
    assert await held(store, "gaits") == {GAIT.arxiv_id}

    # the next release gives the child another query: what the parent held through the old one goes
    release[1] = catalog_topic("okapis", "ti:giraffe", parent="animals")
    await TopicIndex(store, clock).start(release)
    assert await held(store, "okapis") == {GIRAFFE.arxiv_id, GAIT.arxiv_id}  # the grandchild stays below it
    assert await held(store, "animals") == {ZEBRA.arxiv_id, GIRAFFE.arxiv_id, GAIT.arxiv_id}

    # ...and moves the grandchild to the top: its papers leave both former ancestors
    release[2] = catalog_topic("gaits", "ti:gait")
    await TopicIndex(store, clock).start(release)
    assert await held(store, "okapis") == {GIRAFFE.arxiv_id}
    assert await held(store, "animals") == {ZEBRA.arxiv_id, GIRAFFE.arxiv_id}
    animals = await store.topics.find(0, "animals")
    gaits = await store.topics.find(0, "gaits")
    assert animals is not None and gaits is not None and gaits.parent_id is None
    counted = await store.topics.counts_between([animals.id], [BASE_TIME - timedelta(days=9), BASE_TIME])
    assert counted == {animals.id: [2]}

    # a new paper matching the child's query is stored for the root in the same transaction
    index = TopicIndex(store, clock)
    await index.start(release)
    late = make_paper(35, title="Giraffe herds", abstract="Herds of giraffes.")
    async with store.transaction():
        matches = await index.record_matches(await store.papers.upsert([late], seen_at=clock.now()), [late])
    okapis = await store.topics.find(0, "okapis")
    assert okapis is not None and matches.topics == {late.arxiv_id: {okapis.id, animals.id}}
    assert late.arxiv_id in await held(store, "animals")


async def test_a_topics_own_match_is_kept_when_the_child_that_also_matched_changes(
    store: Store, clock: FakeClock
) -> None:
    both = make_paper(36, title="Zebra and okapi", abstract="Two animals.")
    await store.papers.upsert([both], seen_at=clock.now())
    release = [catalog_topic("animals", "ti:zebra"), catalog_topic("okapis", "ti:okapi", parent="animals")]
    await TopicIndex(store, clock).start(release)
    release[1] = catalog_topic("okapis", "ti:giraffe", parent="animals")
    await TopicIndex(store, clock).start(release)
    assert await held(store, "animals") == {both.arxiv_id}  # its own query matches it
    assert await held(store, "okapis") == set()


async def test_a_catalog_parent_that_is_no_topic_fails_at_start_naming_the_topic(
    store: Store, clock: FakeClock
) -> None:
    orphan = catalog_topic("okapis", "ti:okapi", parent="animals")
    with pytest.raises(
        CatalogError, match="topic 'Okapis' \\(slug 'okapis'\\) names an unknown parent 'animals'"
    ):
        await TopicIndex(store, clock).start([orphan])
    assert await store.topics.all() == []  # refused before anything was written
    # a parent stored by an earlier start is found even when this list leaves it out
    await TopicIndex(store, clock).start([catalog_topic("animals", "ti:zebra")])
    await TopicIndex(store, clock).start([orphan])
    okapis = await store.topics.find(0, "okapis")
    animals = await store.topics.find(0, "animals")
    assert okapis is not None and animals is not None and okapis.parent_id == animals.id
    # a cycle through a stored topic this list leaves out is one too
    with pytest.raises(CatalogError, match="topic 'Animals' \\(slug 'animals'\\) is its own ancestor"):
        await TopicIndex(store, clock).start([catalog_topic("animals", "ti:zebra", parent="okapis")])
    animals = await store.topics.find(0, "animals")
    assert animals is not None and animals.parent_id is None


async def test_a_database_from_before_the_tree_gets_the_closure_at_its_first_start(
    tmp_path: Path, clock: FakeClock
) -> None:
    # what the last release left: migrations before 0009, both topics at the top, each holding its own matches
    path = tmp_path / "before-the-tree.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    for version, name, sql in bundled_migrations():
        if version < 9:
            conn.executescript(sql)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    for pk, paper in enumerate((ZEBRA, OKAPI), start=1):
        published = int(paper.published.timestamp())
        conn.execute(
            "INSERT INTO papers (pk, arxiv_id, version, title, abstract, authors, authors_json, primary_category,"
            " categories, published, updated, first_seen, last_changed) VALUES (?, ?, 1, ?, ?, '', '[]', 'cs.LG',"
            " 'cs.LG', ?, ?, 0, 0)",
            (pk, paper.arxiv_id, paper.title, paper.abstract, published, published),
        )
    for topic_id, (slug, name, query, pk) in enumerate(
        (("animals", "Animals", "ti:zebra", 1), ("okapis", "Okapis", "ti:okapi", 2)), start=1
    ):
        conn.execute(
            "INSERT INTO topics (id, guild_id, slug, name, description, query, created_at, updated_at)"
            " VALUES (?, 0, ?, ?, ?, ?, 0, 0)",
            (topic_id, slug, name, f"{slug} papers", query),
        )
        conn.execute(
            "INSERT INTO topic_matches (topic_id, published, paper_pk, matched_at)"
            " SELECT ?, published, pk, 0 FROM papers WHERE pk = ?",
            (topic_id, pk),
        )
    conn.commit()
    conn.close()
    release = [catalog_topic("animals", "ti:zebra"), catalog_topic("okapis", "ti:okapi", parent="animals")]
    async with await SqliteStore.open(path, clock) as store:
        assert await held(store, "animals") == {ZEBRA.arxiv_id}
        await TopicIndex(store, clock).start(release)  # the queries are unchanged: only the place is new
        assert await held(store, "animals") == {ZEBRA.arxiv_id, OKAPI.arxiv_id}
        assert await held(store, "okapis") == {OKAPI.arxiv_id}

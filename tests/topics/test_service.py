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
from bot.store import Store, open_store
from bot.store.database import bundled_migrations
from bot.topics.catalog import CatalogTopic, find_topic, load_catalog
from bot.topics.query import QuerySyntaxError, parse_query
from bot.topics.service import (
    QueryTooBroad,
    TopicError,
    TopicLimitReached,
    TopicLimits,
    TopicService,
    slugify,
)
from tests.factories import BASE_TIME, make_paper

GRPO = make_paper(
    1,
    title="Group Relative Policy Optimization for math reasoning in large language models",
    abstract="We post-train an LLM with GRPO on verifiable rewards and improve reasoning accuracy.",
)
ROBOT = make_paper(
    2,
    title="Sim-to-real transfer for legged robots",
    abstract="We train a quadruped locomotion policy with PPO in simulation and deploy it on hardware.",
    categories=("cs.RO",),
    primary_category="cs.RO",
)


async def test_catalog_topics_match_the_stored_history_at_start(store: Store, clock: FakeClock) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    service = TopicService(store, clock)
    catalog = load_catalog()
    await service.start(catalog)
    grpo = await store.topics.find(0, "Group Relative Policy Optimization")
    assert grpo is not None
    assert [p.arxiv_id for p in await store.topics.latest_papers(grpo.id, 10)] == [GRPO.arxiv_id]
    assert len(await store.topics.all()) == len(catalog)
    # starting again changes nothing and matches nothing twice
    await TopicService(store, clock).start(catalog)
    assert (
        await store.topics.count_matches(grpo.id, GRPO.published, GRPO.published + timedelta(seconds=1)) == 1
    )


async def test_new_papers_are_matched_inside_the_ingest_transaction(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, clock)
    catalog = load_catalog()
    await service.start([t for t in catalog if t.name in ("RL Post-Training", "Robot Learning")])
    async with store.transaction():
        result = await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
        matches = await service.on_stored(result, [GRPO, ROBOT])
    rl = await store.topics.find(0, "rl-post-training")
    assert rl is not None and rl.id in matches[GRPO.arxiv_id]
    assert rl.id not in matches.get(ROBOT.arxiv_id, set())
    assert find_topic(catalog, "RL Post-Training") is not None


async def test_custom_topic_matches_history_and_rematches_when_its_query_changes(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    service = TopicService(store, clock)
    row, matched = await service.save_custom(42, "Legged robots", 'abs:quadruped OR ti:"legged robots"')
    assert matched == 1 and row.guild_id == 42 and row.slug == "legged-robots"
    row2, matched2 = await service.save_custom(42, "Legged robots", "abs:GRPO")
    assert row2.id == row.id and matched2 == 1
    assert [p.arxiv_id for p in await store.topics.latest_papers(row.id, 10)] == [GRPO.arxiv_id]
    assert (await store.topics.find(7, "Legged robots")) is None  # another server does not see it


async def test_custom_topic_errors(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, clock)
    await service.start([t for t in load_catalog() if t.name == "Tool Use"])
    with pytest.raises(QuerySyntaxError) as bad:
        await service.save_custom(1, "Mine", "ti:agents AND")
    assert bad.value.position == len("ti:agents AND")
    with pytest.raises(TopicError, match="catalog topic"):
        await service.save_custom(1, "tool use", "ti:tools")
    with pytest.raises(TopicError, match="1 to 80"):
        await service.save_custom(1, "x" * 81, "ti:tools")


def test_slugify_keeps_every_script_apart() -> None:
    assert slugify("  RL Post-Training!! ") == "rl-post-training"
    assert slugify("Métodos ópticos") == "métodos-ópticos"
    assert len({slugify(n) for n in ("量子", "機械学習", "🙂", "🚀", "मशीन", "मशन", "Topic")}) == 7
    assert slugify("Graph Theory") == slugify("graph-theory!") == slugify("GRAPH   theory")
    assert slugify("Straße") == slugify("STRASSE")  # case folding, not just lowering


async def test_history_scan_finds_category_bound_topics_whatever_the_case(
    store: Store, clock: FakeClock
) -> None:
    robots = [
        make_paper(10 + i, title=f"Grasping study {i}", categories=("cs.RO",), primary_category="cs.RO")
        for i in range(3)
    ]
    await store.papers.upsert([*robots, GRPO], seen_at=clock.now())
    service = TopicService(store, clock)
    # the case differs from the stored "cs.RO": queries are case-insensitive, the category filter must be too
    _, matched = await service.save_custom(1, "Robots", "cat:CS.ro")
    assert matched == 3
    with pytest.raises(QueryTooBroad, match="not inside an OR"):
        # an OR with a free branch is not bound to cs.RO, and has no word for the index: a full scan
        await service.save_custom(1, "Robots or GRPO", "cat:cs.RO OR abs:GRPO")
    _, none = await service.save_custom(1, "Nowhere", "cat:q-bio.NC AND ti:grasping")
    assert none == 0
    assert await store.papers.category_names() == ["cs.AI", "cs.LG", "cs.RO"]


# ---- names: any script, clashes refused, legacy rows re-keyed ---------------------------------------------


async def test_names_in_any_script_are_distinct_topics_and_a_clash_is_refused(
    store: Store, clock: FakeClock
) -> None:
    service = TopicService(store, clock)
    quantum, _ = await service.save_custom(5, "量子", "ti:quantum")
    learning, _ = await service.save_custom(5, "機械学習", "ti:learning")
    assert quantum.id != learning.id
    assert sorted((t.name, t.query) for t in await store.topics.own(5)) == [
        ("機械学習", "ti:learning"),
        ("量子", "ti:quantum"),
    ]
    assert (await service.find(5, "量子")) == quantum

    graph, _ = await service.save_custom(5, "Graph Theory", "ti:graph")
    with pytest.raises(TopicError, match="already has the topic “Graph Theory”") as clash:
        await service.save_custom(5, "graph-theory!", "ti:theorem")
    assert "use its name exactly" in str(clash.value)
    assert (await store.topics.get(graph.id)) == graph  # untouched
    # its very name (any case or spacing) changes it
    changed, _ = await service.save_custom(5, "GRAPH  theory", "ti:graphs")
    assert changed.id == graph.id and changed.name == "Graph Theory" and changed.query == "ti:graphs"


async def test_store_never_overwrites_a_topic_on_create(store: Store, clock: FakeClock) -> None:
    from bot.store.topics import TopicNameTaken

    first = await store.topics.create(
        guild_id=3, name="Graph Theory", description="", query="a", at=clock.now()
    )
    with pytest.raises(TopicNameTaken):
        await store.topics.create(guild_id=3, name="graph theory!", description="", query="b", at=clock.now())
    assert await store.topics.own(3) == [first]


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
    async with await open_store(path, clock) as store:
        service = TopicService(store, clock)
        await service.start([])
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
        await TopicService(store, clock).start([])  # the queue is done: a second start changes nothing
        assert {t.name: t.slug for t in await store.topics.own(9)} == {
            **slugs,
            "Topic": "topic",
            "ロボット": "ロボット",
        }


# ---- a server's topic wins over the catalog's ----------------------------------------------------------------


async def test_a_catalog_update_never_hides_a_servers_own_topic(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, clock)
    await service.start([])
    own, _ = await service.save_custom(4, "Quantum Widgets", "ti:widget")
    twin = CatalogTopic(
        slug="quantum-widgets", name="Quantum Widgets", description="d", query=parse_query("ti:quantum")
    )
    await service.start([twin])  # the next release's catalog has a topic of that name

    assert await service.find(4, "Quantum Widgets") == own
    assert await service.find(4, "quantum-widgets") == own
    assert [t.name for t in await service.visible_to(4)].count("Quantum Widgets") == 1
    assert own in await service.visible_to(4)
    changed, _ = await service.save_custom(4, "Quantum Widgets", "ti:widgets AND ti:quantum")
    assert changed.id == own.id  # still the server's to change
    catalog_row = await service.find(7, "Quantum Widgets")  # elsewhere, the name means the catalog's
    assert catalog_row is not None and catalog_row.is_catalog


# ---- limits: indexable, not too broad, at most 50 topics, a few changes an hour ---------------------------


@pytest.mark.parametrize("text", ["a*", "au:k", "cat:cs.*", "id:2401*", "id:2611.10001", "a* OR cat:cs.*"])
async def test_a_query_without_an_index_term_is_refused(store: Store, clock: FakeClock, text: str) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    service = TopicService(store, clock)
    with pytest.raises(QueryTooBroad, match="no word the search index can use") as refused:
        await service.save_custom(1, "Everything", text)
    assert "AND" in str(refused.value) and "cat:cs.RO AND abs:grasping" in str(refused.value)
    assert await store.topics.own(1) == []


def crowd(n: int, start: int = 5000) -> list[Paper]:
    """Papers whose titles share a prefix ("kalman"/"lorentz"...) and a word ("common")."""
    words = ["kalman", "karma", "lorentz", "logic"]
    return [
        make_paper(start + i, title=f"{words[i % 4]} filters and common things {i}", abstract="We study it.")
        for i in range(n)
    ]


async def test_a_query_covering_much_of_the_history_is_refused_with_how_to_narrow_it(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert([*crowd(1200), GRPO, ROBOT], seen_at=clock.now())
    service = TopicService(store, clock)
    with pytest.raises(QueryTooBroad, match="too broad") as broad:
        await service.save_custom(1, "Ka or lo", "ka* OR lo*")
    assert "1,000 of the 1,202 stored papers" in str(broad.value) and "at least 4 letters" in str(broad.value)
    with pytest.raises(QueryTooBroad):
        await service.save_custom(1, "All of cs.LG", "cat:cs.LG")  # a category most papers have
    _, matched = await service.save_custom(1, "Kalman", "ti:kalman")  # a quarter of them: allowed
    assert matched == 300
    assert [t.name for t in await store.topics.own(1)] == ["Kalman"]


async def test_a_server_has_at_most_50_topics_and_10_changes_an_hour(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, clock)
    for n in range(10):
        await service.save_custom(2, f"Topic {n}", f"ti:word{n}")
    with pytest.raises(TopicLimitReached, match="10 topic queries in the last hour") as rate:
        await service.save_custom(2, "Topic 10", "ti:word10")
    assert "Try again in 60 minutes" in str(rate.value)
    with pytest.raises(TopicLimitReached):
        await service.save_custom(2, "Topic 0", "ti:other")  # changing a query counts too
    _, unchanged = await service.save_custom(2, "Topic 0", "ti:word0")  # saving the same query is free
    assert unchanged == 0
    await service.save_custom(3, "Topic 0", "ti:word0")  # another server has its own allowance

    clock.advance(3600)
    for n in range(10, 50):
        clock.advance(6 * 60)  # ten an hour
        await service.save_custom(2, f"Topic {n}", f"ti:word{n}")
    clock.advance(3600)
    with pytest.raises(TopicLimitReached, match="50 topics of its own") as full:
        await service.save_custom(2, "Topic 50", "ti:word50")
    assert "/unfollow" in str(full.value)
    changed, _ = await service.save_custom(2, "Topic 0", "ti:changed")  # changing one is still allowed
    assert changed.query == "ti:changed"
    await service.delete_custom(changed)
    await service.save_custom(2, "Topic 50", "ti:word50")
    assert await store.topics.count_own(2) == 50


# ---- the history match runs off the event loop ---------------------------------------------------------------


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
    service = TopicService(store, clock)
    query = parse_query("ti:filters ANDNOT ti:karma")
    row = await store.topics.create(
        guild_id=1, name="Filters", description="", query=query.text, at=clock.now()
    )
    matched = await service.match_history(row.id, query)
    assert matched == 2500 - 625
    assert len(executor.threads) >= 3  # one trip per batch of 1,000 candidates
    assert threading.get_ident() not in executor.threads


async def test_a_history_match_of_a_query_the_topic_no_longer_has_adds_nothing(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert(crowd(2500), seen_at=clock.now())
    service = TopicService(store, clock)
    topic, _ = await service.save_custom(1, "Filters", "ti:kalman")
    stale = parse_query("ti:filters")  # e.g. a match still running when /follow gave the topic a new query
    assert await service.match_history(topic.id, stale) == 0
    assert len(await store.topics.latest_papers(topic.id, 1000)) == 625
    await service.delete_custom(topic)  # e.g. /unfollow deleting it while a match still runs
    assert await service.match_history(topic.id, parse_query("ti:kalman")) == 0


# ---- search: past the first candidates, and honest when it stops ---------------------------------------------


async def test_search_finds_matches_ranked_below_the_first_candidates(store: Store, clock: FakeClock) -> None:
    crowded = [
        make_paper(7000 + i, title=f"Transformer attention study {i}", abstract="Transformer attention.")
        for i in range(1200)
    ]
    plain = [
        make_paper(9000 + i, title=f"Sequence models {i}", abstract="A long abstract. " * 20 + "transformer")
        for i in range(3)
    ]
    old_ids = [
        make_paper(1, arxiv_id=f"2001.0000{i}", published=BASE_TIME - timedelta(days=900)) for i in range(2)
    ]
    await store.papers.upsert([*crowded, *plain, *old_ids], seen_at=clock.now())
    service = TopicService(store, clock)

    result = await service.search(parse_query("transformer ANDNOT attention"))
    assert sorted(h.paper.arxiv_id for h in result.hits) == sorted(p.arxiv_id for p in plain)
    assert result.complete and result.checked == 1203

    by_id = await service.search(parse_query("id:2001*"))
    assert sorted(h.paper.arxiv_id for h in by_id.hits) == sorted(p.arxiv_id for p in old_ids)

    bounded = TopicService(store, clock, TopicLimits(search_candidates=700))
    partial = await bounded.search(parse_query("transformer ANDNOT attention"))
    assert (partial.hits, partial.checked, partial.complete) == ([], 700, False)
    enough = await service.search(parse_query("transformer"), want=10)
    assert len(enough.hits) == 10 and enough.complete


async def test_latest_refuses_a_count_outside_1_to_50(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, clock)
    row, _ = await service.save_custom(1, "Robots", "ti:legged")
    for count in (-1, 0, 51):
        with pytest.raises(TopicError, match="1 to 50"):
            await service.latest(row.id, count)
    with pytest.raises(ValueError):
        await store.topics.latest_papers(row.id, -1)

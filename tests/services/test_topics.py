"""A server's own topics: created and changed within limits (names, scope, count, rate), found by name before
the catalog's, their history matched."""

from __future__ import annotations

import pytest

from bot.clock import FakeClock
from bot.models import Paper, TopicRow
from bot.services.topics import (
    QueryTooBroad,
    TopicError,
    TopicLimitReached,
    TopicLimits,
    TopicService,
    UnknownTopic,
    slugify,
    topic_tree,
)
from bot.store import Store
from bot.topics.catalog import CatalogTopic, load_catalog
from bot.topics.index import TopicIndex
from bot.topics.query import QuerySyntaxError, parse_query
from tests.factories import GRPO, ROBOT, make_paper


def topic_service(store: Store, clock: FakeClock) -> TopicService:
    return TopicService(store, TopicIndex(store, clock), clock)


async def test_custom_topic_matches_history_and_rematches_when_its_query_changes(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert([GRPO, ROBOT], seen_at=clock.now())
    service = topic_service(store, clock)
    row, matched = await service.save_custom(42, "Legged robots", 'abs:quadruped OR ti:"legged robots"')
    assert matched == 1 and row.guild_id == 42 and row.slug == "legged-robots"
    row2, matched2 = await service.save_custom(42, "Legged robots", "abs:GRPO")
    assert row2.id == row.id and matched2 == 1
    assert [p.arxiv_id for p in await store.topics.latest_papers(row.id, 10)] == [GRPO.arxiv_id]
    assert (await store.topics.find(7, "Legged robots")) is None  # another server does not see it


async def test_custom_topic_errors(store: Store, clock: FakeClock) -> None:
    service = topic_service(store, clock)
    await service.index.start([t for t in load_catalog() if t.name == "Tool Use"])
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
    service = topic_service(store, clock)
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
    service = topic_service(store, clock)
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
    from bot.store.protocol import TopicNameTaken

    first = await store.topics.create(
        guild_id=3, name="Graph Theory", description="", query="a", at=clock.now()
    )
    with pytest.raises(TopicNameTaken):
        await store.topics.create(guild_id=3, name="graph theory!", description="", query="b", at=clock.now())
    assert await store.topics.own(3) == [first]


# ---- a server's topic wins over the catalog's ----------------------------------------------------------------


async def test_a_catalog_update_never_hides_a_servers_own_topic(store: Store, clock: FakeClock) -> None:
    service = topic_service(store, clock)
    await service.index.start([])
    own, _ = await service.save_custom(4, "Quantum Widgets", "ti:widget")
    twin = CatalogTopic(
        slug="quantum-widgets", name="Quantum Widgets", description="d", query=parse_query("ti:quantum")
    )
    await service.index.start([twin])  # the next release's catalog has a topic of that name

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
    service = topic_service(store, clock)
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
    service = topic_service(store, clock)
    with pytest.raises(QueryTooBroad, match="too broad") as broad:
        await service.save_custom(1, "Ka or lo", "ka* OR lo*")
    assert "1,000 of the 1,202 stored papers" in str(broad.value) and "at least 4 letters" in str(broad.value)
    with pytest.raises(QueryTooBroad):
        await service.save_custom(1, "All of cs.LG", "cat:cs.LG")  # a category most papers have
    _, matched = await service.save_custom(1, "Kalman", "ti:kalman")  # a quarter of them: allowed
    assert matched == 300
    assert [t.name for t in await store.topics.own(1)] == ["Kalman"]


async def test_a_server_has_at_most_50_topics_and_10_changes_an_hour(store: Store, clock: FakeClock) -> None:
    service = topic_service(store, clock)
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


async def test_suggestions_for_what_was_typed_and_an_unknown_name(store: Store, clock: FakeClock) -> None:
    service = topic_service(store, clock)
    await service.index.start([t for t in load_catalog() if t.name in ("RL Post-Training", "Robot Learning")])
    await service.save_custom(1, "Learning Dynamics", "ti:dynamics")
    await service.save_custom(1, "Reward Shaping Tricks", "ti:shaping", parent="RL Post-Training")
    await service.save_custom(2, "Elsewhere Learning", "ti:elsewhere")
    # where the text appears first, in the tree ("Parent › Child"), then in the tree's order; another
    # server's never; a choice's value is the topic's own name
    shaping = ("RL Post-Training › Reward Shaping Tricks", "Reward Shaping Tricks")
    assert await service.suggest(1, "learn") == [
        ("Learning Dynamics", "Learning Dynamics"),
        ("Robot Learning", "Robot Learning"),
    ]
    assert await service.suggest(1, "") == [
        ("Learning Dynamics", "Learning Dynamics"),
        ("RL Post-Training", "RL Post-Training"),
        shaping,
        ("Robot Learning", "Robot Learning"),
    ]
    assert await service.suggest(1, "rl post") == [("RL Post-Training", "RL Post-Training"), shaping]
    assert await service.suggest(1, "shaping") == [shaping]
    # the slug, when the name lacks it
    assert await service.suggest(1, "rl-post") == [("RL Post-Training", "RL Post-Training")]
    assert (await service.resolve(1, "robot  learning")).name == "Robot Learning"
    with pytest.raises(UnknownTopic, match="no topic named “Elsewhere Learning”"):
        await service.resolve(1, "Elsewhere Learning")


async def test_a_query_too_long_is_refused_with_its_length(store: Store, clock: FakeClock) -> None:
    service = topic_service(store, clock)
    with pytest.raises(TopicError, match="at most 500 characters; this one has 501"):
        await service.save_custom(1, "Long", "a" * 501)
    assert await service.own(1) == []


# ---- a server's own topics in the tree ----------------------------------------------------------------------


ZEBRA = make_paper(61, title="Zebra stripes", abstract="Stripes.")
OKAPI = make_paper(62, title="Okapi diets", abstract="Leaves.")
GIRAFFE = make_paper(63, title="Giraffe necks", abstract="Necks.")


async def holds(store: Store, topic_id: int) -> set[str]:
    return {p.arxiv_id for p in await store.topics.latest_papers(topic_id, 100)}


async def test_a_servers_parent_holds_its_childs_papers_until_the_child_changes_moves_or_goes(
    store: Store, clock: FakeClock
) -> None:
    await store.papers.upsert([ZEBRA, OKAPI, GIRAFFE], seen_at=clock.now())
    service = topic_service(store, clock)
    animals, _ = await service.save_custom(5, "Animals", "ti:zebra")
    okapis, matched = await service.save_custom(5, "Okapis", "ti:okapi", parent="Animals")
    assert okapis.parent_id == animals.id and matched == 1
    assert await holds(store, animals.id) == {ZEBRA.arxiv_id, OKAPI.arxiv_id}

    await service.save_custom(5, "Okapis", "ti:giraffe")  # a new query: the parent follows
    assert await holds(store, animals.id) == {ZEBRA.arxiv_id, GIRAFFE.arxiv_id}
    moved, held = await service.save_custom(5, "Okapis", None, parent="none")  # back at the top
    assert moved.parent_id is None and held == 1
    assert await holds(store, animals.id) == {ZEBRA.arxiv_id}
    await service.save_custom(5, "Okapis", None, parent="animals")
    assert await holds(store, animals.id) == {ZEBRA.arxiv_id, GIRAFFE.arxiv_id}

    # a parent keeps its own papers when it changes query, and gets its children's back at once
    _, held = await service.save_custom(5, "Animals", "ti:stripes")
    assert held == 2 and await holds(store, animals.id) == {ZEBRA.arxiv_id, GIRAFFE.arxiv_id}

    await service.delete_custom(moved)  # its papers leave the parent with it
    assert await holds(store, animals.id) == {ZEBRA.arxiv_id}
    # deleting a parent moves its children to the top
    child, _ = await service.save_custom(5, "Okapis", "ti:okapi", parent="Animals")
    await service.delete_custom(animals)
    orphan = await service.find(5, "Okapis")
    assert orphan is not None and orphan.id == child.id and orphan.parent_id is None
    assert await holds(store, child.id) == {OKAPI.arxiv_id}


async def test_a_parent_that_is_unknown_the_topic_itself_or_below_it_is_refused(
    store: Store, clock: FakeClock
) -> None:
    service = topic_service(store, clock)
    await service.index.start([t for t in load_catalog() if t.name == "RL Post-Training"])
    with pytest.raises(TopicError, match="no topic named “Mammals” to put “Okapis” under"):
        await service.save_custom(5, "Okapis", "ti:okapi", parent="Mammals")
    with pytest.raises(TopicError, match="“Okapis” cannot be its own parent"):
        await service.save_custom(5, "Okapis", "ti:okapi", parent=" okapis ")
    await service.save_custom(5, "Animals", "ti:zebra", parent="rl-post-training")  # a catalog slug will do
    await service.save_custom(5, "Okapis", "ti:okapi", parent="Animals")
    await service.save_custom(5, "Okapi Gaits", "ti:gait", parent="Okapis")
    with pytest.raises(
        TopicError, match="“Okapi Gaits” sits under “Animals”, so “Animals” cannot go under it"
    ):
        await service.save_custom(5, "Animals", None, parent="Okapi Gaits")
    with pytest.raises(TopicError, match="“Okapis” cannot be its own parent"):
        await service.save_custom(5, "Okapis", None, parent="Okapis")
    with pytest.raises(UnknownTopic):  # placing a topic that does not exist needs its query
        await service.save_custom(5, "Bongos", None, parent="Animals")
    animals = await service.find(5, "Animals")
    assert animals is not None and animals.parent_id is not None  # still under RL Post-Training
    # another server's topic is no parent here
    with pytest.raises(TopicError, match="no topic named “Animals”"):
        await service.save_custom(6, "Zebras", "ti:zebra", parent="Animals")


async def test_a_placement_counts_towards_the_hourly_changes(store: Store, clock: FakeClock) -> None:
    service = TopicService(store, TopicIndex(store, clock), clock, TopicLimits(changes_per_hour=3))
    await service.save_custom(5, "Animals", "ti:zebra")
    await service.save_custom(5, "Okapis", "ti:okapi")
    await service.save_custom(5, "Okapis", None, parent="Animals")
    with pytest.raises(TopicLimitReached, match="3 topic queries in the last hour"):
        await service.save_custom(5, "Okapis", None, parent="none")
    await service.save_custom(5, "Okapis", None, parent="Animals")  # where it is already: no change, allowed


def test_a_label_keeps_the_topics_name_whole_and_gives_way_from_the_root() -> None:
    long = "A very long name of a server's own topic about okapis and their gaits, 80 chars!"
    rows = [
        TopicRow(1, 0, "rl", "RL Post-Training", "", "ti:rl"),
        TopicRow(2, 0, "rm", "Reward Modeling", "", "ti:rm", parent_id=1),
        TopicRow(3, 0, "prm", "Process Reward Models", "", "ti:prm", parent_id=2),
        TopicRow(4, 9, "long", long, "", "ti:okapi", parent_id=3),
        TopicRow(5, 9, "top", "Alpha", "", "ti:alpha"),
    ]
    tree = topic_tree(rows)
    assert [(depth, t.id) for depth, t in tree.rows] == [(0, 5), (0, 1), (1, 2), (2, 3), (3, 4)]
    assert tree.label(3) == "RL Post-Training › Reward Modeling › Process Reward Models"
    assert tree.label(4) == f"… › {long}" and len(long) == 80
    assert tree.label(3, limit=45) == "… › Reward Modeling › Process Reward Models"
    assert tree.label(4, limit=20) == long[:19] + "…"
    # a parent hidden from the server (a catalog topic named like one of its own) leaves its children at the top
    assert [t.id for depth, t in topic_tree(rows[1:]).rows if depth == 0] == [5, 2]

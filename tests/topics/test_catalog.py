"""The curated catalog: it loads, covers the promised topics in a tree, and each topic separates its labelled
positive examples from near-miss negatives (tests/topics/catalog_examples.toml) under the hierarchy's rule: a
topic matches a paper when its own query or a descendant's does."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError
from bot.models import Paper
from bot.services.topics import TopicError, check_query
from bot.topics.catalog import (
    CATALOG_QUERY_LENGTH,
    CatalogError,
    CatalogTopic,
    catalog_hierarchy,
    find_topic,
    load_catalog,
)
from bot.topics.query import MAX_QUERY_LENGTH
from tests.factories import text_paper

CATALOG_FILE = Path(__file__).parents[2] / "bot" / "topics" / "catalog.toml"
EXAMPLES: dict[str, dict[str, list[dict[str, Any]]]] = tomllib.loads(
    (Path(__file__).parent / "catalog_examples.toml").read_text(encoding="utf-8")
)
CATALOG = load_catalog()
BY_SLUG = {topic.slug: topic for topic in CATALOG}
TREE = catalog_hierarchy(CATALOG)

REQUIRED_NAMES = (
    "RL Post-Training", "Group Relative Policy Optimization", "Direct Preference Optimization",
    "RL from Human Feedback", "RL with Verifiable Rewards", "Reward Modeling", "Process Reward Models",
    "Reward Hacking", "On-Policy Distillation", "Knowledge Distillation", "Credit Assignment in RL",
    "Speculative Decoding", "RL for Code Generation", "LLM Agent Training", "Tool Use", "Offline RL",
    "Multi-Objective RL", "RL for Diffusion Models", "Curriculum RL", "LLM Reasoning", "Test-Time Scaling",
    "Mixture of Experts", "State Space Models", "Retrieval-Augmented Generation", "Vision-Language Models",
    "Diffusion Models", "Autonomous Driving", "Robot Learning", "Mechanistic Interpretability",
    "LLM Safety", "Jailbreaks", "Federated Learning", "Graph Neural Networks", "Quantization",
    "Long Context", "Multimodal LLMs", "AI for Science", "Speech Recognition", "Time Series",
    "Recommender Systems",
)  # fmt: skip


def example_paper(example: dict[str, Any], n: int = 1) -> Paper:
    """A labelled example (title, abstract, optional authors) as a paper."""
    authors = tuple(example.get("authors", ["Jane Doe", "Wei Zhang"]))
    return text_paper(example["title"], example["abstract"], authors, arxiv_id=f"2603.{n:05d}")


def topic_matches(slug: str, paper: Paper) -> bool:
    """The follower's view: the topic's own query or any descendant's matches."""
    return TREE.matches(slug, lambda key: BY_SLUG[key].query.matches(paper))


def mismatches(topic: CatalogTopic, kind: str, expected: bool) -> list[str]:
    """Titles of the topic's `kind` examples whose match result differs from `expected`."""
    examples = EXAMPLES[topic.slug][kind]
    return [
        ex["title"]
        for n, ex in enumerate(examples, start=1)
        if topic_matches(topic.slug, example_paper(ex, n)) is not expected
    ]


# --- the packaged catalog ----------------------------------------------------------------------


def test_catalog_has_at_least_forty_topics_with_unique_slugs_and_names() -> None:
    assert len(CATALOG) >= 44
    assert len({t.slug for t in CATALOG}) == len(CATALOG)
    assert len({t.name.casefold() for t in CATALOG}) == len(CATALOG)


def test_every_required_name_is_present_exactly() -> None:
    names = {topic.name for topic in CATALOG}
    assert [name for name in REQUIRED_NAMES if name not in names] == []


def test_topics_are_described_for_a_reader_choosing_what_to_follow() -> None:
    for topic in CATALOG:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", topic.slug), topic.slug
        sentences = re.findall(r"[.!?](?:\s|$)", topic.description)
        assert 1 <= len(sentences) <= 3, f"{topic.slug}: description should be 1-3 sentences"
        assert "\n" not in topic.description and "  " not in topic.description, topic.slug


def test_every_topic_defines_what_belongs_and_what_does_not() -> None:
    for topic in CATALOG:
        assert "Out:" in topic.definition, f"{topic.slug}: the definition should say what does not belong"
        assert len(topic.definition) > len(topic.description) / 2, topic.slug


def test_rl_post_training_is_the_parent_of_its_sub_topics() -> None:
    children = {BY_SLUG[slug].name for slug in TREE.children("rl-post-training")}
    assert children >= {
        "Group Relative Policy Optimization", "RL with Verifiable Rewards", "RL from Human Feedback",
        "Direct Preference Optimization", "Reward Modeling", "Reward Hacking", "On-Policy Distillation",
        "Credit Assignment in RL", "Curriculum RL", "RL for Code Generation", "LLM Agent Training",
        "Multi-Objective RL", "RL for Diffusion Models", "RL for Multimodal Models",
        "RL for Robot and Action Models", "RL Training Systems",
    }  # fmt: skip
    assert TREE.ancestors("process-reward-models") == ["reward-modeling", "rl-post-training"]
    assert TREE.roots()[0] == "rl-post-training"


def test_a_paper_of_a_child_topic_reaches_the_parent_through_the_tree() -> None:
    # The site's RL Post-Training includes self-distillation and preference-tuned generators, which the
    # parent's own query does not name: its followers get them through the children.
    parent = BY_SLUG["rl-post-training"]
    papers = [example_paper(ex, n) for n, ex in enumerate(EXAMPLES[parent.slug]["positive"], start=1)]
    through_children = [p.title for p in papers if not parent.query.matches(p)]
    assert "Quality-Gated Self-Distillation for GUI Grounding" in through_children
    assert all(topic_matches(parent.slug, p) for p in papers)


def test_jailbreak_papers_reach_llm_safety_through_the_tree() -> None:
    # The field counts jailbreaks as a part of LLM safety: a follower of LLM Safety gets them, including
    # a prompt-injection paper that LLM Safety's own query does not catch.
    assert TREE.ancestors("jailbreaks") == ["llm-safety"]
    paper = example_paper(
        {
            "title": "Indirect Prompt Injection Through Retrieved Web Pages",
            "abstract": "Instructions hidden in a retrieved page redirect an assistant's actions. We build 400 "
            "such pages and find that every tested model follows at least a third of them.",
        }
    )
    assert not BY_SLUG["llm-safety"].query.matches(paper)
    assert topic_matches("llm-safety", paper)


# --- labelled examples -------------------------------------------------------------------------


def test_every_example_slug_names_a_catalog_topic() -> None:
    assert sorted(set(EXAMPLES) - set(BY_SLUG)) == []


def test_every_topic_has_two_positive_and_two_negative_examples() -> None:
    thin = [
        topic.slug
        for topic in CATALOG
        if len(EXAMPLES.get(topic.slug, {}).get("positive", [])) < 2
        or len(EXAMPLES.get(topic.slug, {}).get("negative", [])) < 2
    ]
    assert thin == []


@pytest.mark.parametrize("slug", sorted(BY_SLUG))
def test_topic_matches_its_positive_examples(slug: str) -> None:
    assert mismatches(BY_SLUG[slug], "positive", expected=True) == []


@pytest.mark.parametrize("slug", sorted(BY_SLUG))
def test_topic_rejects_its_near_miss_negative_examples(slug: str) -> None:
    assert mismatches(BY_SLUG[slug], "negative", expected=False) == []


def test_an_off_field_paper_matches_no_topic() -> None:
    paper = example_paper(
        {
            "title": "On the Parity of Partition Functions in Arithmetic Progressions",
            "abstract": "We prove that the partition function takes even and odd values equally often in "
            "every arithmetic progression modulo a prime below 100, using modular forms of half-integral "
            "weight and an explicit Sturm bound.",
        }
    )
    assert [t.slug for t in CATALOG if t.query.matches(paper)] == []


def test_keywords_that_are_also_first_names_are_scoped_to_the_abstract() -> None:
    # Bare terms search authors too (the Mamba control shows it), so a keyword that is also a common
    # first name (CARLA, the driving simulator) is written abs:CARLA and must not match an author.
    paper = example_paper(
        {"title": "A study", "abstract": "Nothing relevant here.", "authors": ["Mamba Jones"]}
    )
    assert BY_SLUG["state-space-models"].query.matches(paper)
    carla = example_paper({"title": "A study", "abstract": "Nothing relevant.", "authors": ["Carla Gomes"]})
    assert not BY_SLUG["autonomous-driving"].query.matches(carla)


# --- find_topic --------------------------------------------------------------------------------


def test_find_topic_by_name_or_slug_ignoring_case_and_spacing() -> None:
    topic = BY_SLUG["rl-post-training"]
    assert find_topic(CATALOG, "RL Post-Training") is topic
    assert find_topic(CATALOG, "  rl   post-training ") is topic
    assert find_topic(CATALOG, "RL-POST-TRAINING") is topic
    assert find_topic(CATALOG, "Retrieval-Augmented Generation") is BY_SLUG["rag"]


def test_find_topic_returns_none_for_unknown_text() -> None:
    assert find_topic(CATALOG, "Underwater Basket Weaving") is None
    assert find_topic(CATALOG, "") is None


# --- validation of a broken catalog ------------------------------------------------------------

GOOD_TOPIC = """
[[topic]]
slug = "{slug}"
name = "{name}"
description = "{description}"
definition = "{definition}"
query = '{query}'
{parent}"""


def write_catalog(tmp_path: Path, *topics: dict[str, str], extra: str = "") -> Path:
    defaults = {
        "description": "Covers things.",
        "definition": "Things. Out: other things.",
        "query": '"offline RL"',
    }
    filled = ({**defaults, **topic} for topic in topics)
    text = "".join(
        GOOD_TOPIC.format(**(t | {"parent": f'parent = "{t["parent"]}"\n' if "parent" in t else ""}))
        for t in filled
    )
    text += extra
    path = tmp_path / "catalog.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_small_valid_catalog_loads_in_file_order(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path,
        {"slug": "b-topic", "name": "B Topic", "query": 'ti:"world model" OR Dreamer'},
        {"slug": "a-topic", "name": "A Topic", "description": "Spans\\n   two lines."},
    )
    topics = load_catalog(path)
    assert [t.slug for t in topics] == ["b-topic", "a-topic"]
    assert topics[1].description == "Spans two lines."
    assert topics[0].categories == ()
    assert topics[0].query.matches(example_paper({"title": "Dreamer returns", "abstract": "Short."}))


def test_a_catalog_query_may_be_longer_than_a_servers_own_query(tmp_path: Path) -> None:
    # Reviewed catalog queries have room for their field's phrases; a /follow query keeps the tighter bound.
    phrases = " OR ".join(f'"reward phrase {n}"' for n in range(60))
    assert MAX_QUERY_LENGTH < len(phrases) <= CATALOG_QUERY_LENGTH
    (topic,) = load_catalog(write_catalog(tmp_path, {"slug": "long", "name": "Long", "query": phrases}))
    assert topic.query.matches(example_paper({"title": "On reward phrase 59", "abstract": "Short."}))
    with pytest.raises(TopicError, match="at most 500 characters"):
        check_query(phrases)


def test_a_catalog_query_over_its_bound_fails_naming_the_topic(tmp_path: Path) -> None:
    phrases = " OR ".join(f'"reward phrase {n}"' for n in range(70))
    assert len(phrases) > CATALOG_QUERY_LENGTH
    path = write_catalog(tmp_path, {"slug": "long", "name": "Long", "query": phrases})
    with pytest.raises(
        CatalogError, match=rf"topic #1 \('long'\): query has {len(phrases)} characters, more than "
    ):
        load_catalog(path)


def test_duplicate_slug_error_names_both_topics(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path, {"slug": "offline-rl", "name": "Offline RL"}, {"slug": "offline-rl", "name": "Batch RL"}
    )
    with pytest.raises(CatalogError, match=r"'Batch RL'.*'offline-rl'.*'Offline RL'"):
        load_catalog(path)


def test_duplicate_name_is_case_insensitive(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path, {"slug": "one", "name": "Offline RL"}, {"slug": "two", "name": "OFFLINE rl"}
    )
    with pytest.raises(CatalogError, match="OFFLINE rl"):
        load_catalog(path)


def test_a_name_may_not_shadow_another_topics_slug(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, {"slug": "rag", "name": "Retrieval"}, {"slug": "other", "name": "RAG"})
    with pytest.raises(CatalogError, match="'rag'"):
        load_catalog(path)


def test_bad_query_error_names_the_topic(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path,
        {"slug": "fine", "name": "Fine"},
        {"slug": "broken-topic", "name": "Broken Topic", "query": '(GRPO OR "unclosed'},
    )
    with pytest.raises(CatalogError, match=r"topic #2 \('broken-topic'\): query does not parse"):
        load_catalog(path)


def test_empty_description_error_names_the_topic(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, {"slug": "quiet", "name": "Quiet", "description": "   "})
    with pytest.raises(CatalogError, match=r"'quiet'.*'description' is missing or empty"):
        load_catalog(path)


def test_missing_field_and_unknown_field_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "catalog.toml"
    path.write_text('[[topic]]\nslug = "x"\nname = "X"\nquery = "GRPO"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="'description' is missing"):
        load_catalog(path)
    path.write_text(
        '[[topic]]\nslug = "x"\nname = "X"\ndescription = "D."\nquery = "GRPO"\n', encoding="utf-8"
    )
    with pytest.raises(CatalogError, match=r"'x'.*'definition' is missing"):
        load_catalog(path)
    path = write_catalog(tmp_path, {"slug": "x", "name": "X"}, extra='descripton = "typo"\n')
    with pytest.raises(CatalogError, match=r"unknown field.*descripton"):
        load_catalog(path)


def test_slug_must_be_kebab_case(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, {"slug": "Offline_RL", "name": "Offline RL"})
    with pytest.raises(CatalogError, match="not kebab-case"):
        load_catalog(path)


def test_categories_must_be_a_list_of_names(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, {"slug": "x", "name": "X"}, extra='categories = "cs.LG"\n')
    with pytest.raises(CatalogError, match="'categories' must be a list"):
        load_catalog(path)


def test_unreadable_or_malformed_files_raise_catalog_errors(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read"):
        load_catalog(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[topic]\nslug = ", encoding="utf-8")
    with pytest.raises(CatalogError, match="not valid TOML"):
        load_catalog(bad)
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing yet\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"no \[\[topic\]\] tables"):
        load_catalog(empty)


# --- the tree ------------------------------------------------------------------------------------


def test_a_parent_is_loaded_whatever_the_file_order(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path,
        {"slug": "child", "name": "Child", "parent": "root"},
        {"slug": "root", "name": "Root"},
    )
    topics = load_catalog(path)
    assert [(t.slug, t.parent) for t in topics] == [("child", "root"), ("root", None)]
    assert topics[0].definition == "Things. Out: other things."
    assert catalog_hierarchy(topics).ancestors("child") == ["root"]


def test_an_unknown_parent_fails_naming_the_topic(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, {"slug": "grpo", "name": "GRPO", "parent": "rl-post-trainig"})
    with pytest.raises(
        CatalogError, match=r"topic 'GRPO' \(slug 'grpo'\) names an unknown parent 'rl-post-trainig'"
    ):
        load_catalog(path)


def test_a_self_parent_fails_naming_the_topic(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, {"slug": "loop", "name": "Loop", "parent": "loop"})
    with pytest.raises(CatalogError, match=r"'Loop' \(slug 'loop'\) names itself as its parent"):
        load_catalog(path)


def test_a_cycle_of_parents_fails_naming_the_topics_on_it(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path,
        {"slug": "root", "name": "Root"},
        {"slug": "a", "name": "A", "parent": "b"},
        {"slug": "b", "name": "B", "parent": "c"},
        {"slug": "c", "name": "C", "parent": "a"},
    )
    with pytest.raises(CatalogError, match=r"'A' \(slug 'a'\) is its own ancestor: 'a' -> 'b' -> 'c' -> 'a'"):
        load_catalog(path)


def test_a_parent_must_be_a_slug(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, {"slug": "x", "name": "X", "parent": "RL Post-Training"})
    with pytest.raises(CatalogError, match="'parent' must be the slug of another catalog topic"):
        load_catalog(path)


def test_catalog_errors_are_config_errors() -> None:
    # The app's start-up handler reports ConfigError cleanly; a broken catalog is a deployment problem.
    assert issubclass(CatalogError, ConfigError)

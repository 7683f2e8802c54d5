"""The topic tree: parent links are checked, and a paper matching a child matches every ancestor."""

from __future__ import annotations

import pytest

from bot.errors import PaperwatchError
from bot.topic_tree import Hierarchy, HierarchyError

# rl
# ├── grpo
# ├── reward-modeling
# │   └── prm
# └── dpo
# diffusion
TREE = Hierarchy(
    {
        "rl": None,
        "grpo": "rl",
        "reward-modeling": "rl",
        "prm": "reward-modeling",
        "dpo": "rl",
        "diffusion": None,
    }
)


def test_ancestors_run_from_the_parent_up_to_the_root() -> None:
    assert TREE.ancestors("prm") == ["reward-modeling", "rl"]
    assert TREE.ancestors("grpo") == ["rl"]
    assert TREE.ancestors("rl") == []
    assert TREE.parent("prm") == "reward-modeling"


def test_descendants_are_every_topic_below_depth_first() -> None:
    assert TREE.descendants("rl") == ["grpo", "reward-modeling", "prm", "dpo"]
    assert TREE.descendants("reward-modeling") == ["prm"]
    assert TREE.descendants("prm") == []
    assert TREE.children("rl") == ("grpo", "reward-modeling", "dpo")
    assert TREE.roots() == ["rl", "diffusion"]


def test_a_paper_matching_a_child_matches_every_ancestor() -> None:
    assert TREE.closure(["prm"]) == {"prm", "reward-modeling", "rl"}
    assert TREE.closure(["grpo", "diffusion"]) == {"grpo", "rl", "diffusion"}
    assert TREE.closure([]) == set()


def test_a_topic_matches_when_its_own_query_or_a_descendants_does() -> None:
    own = {"prm"}
    assert TREE.matches("rl", own.__contains__)
    assert TREE.matches("reward-modeling", own.__contains__)
    assert TREE.matches("prm", own.__contains__)
    assert not TREE.matches("grpo", own.__contains__)
    assert not TREE.matches("diffusion", own.__contains__)
    # Matching never looks upward: a parent's own match does not make its children match.
    assert not TREE.matches("grpo", {"rl"}.__contains__)


def test_the_most_specific_topics_are_those_with_no_matched_descendant() -> None:
    assert TREE.most_specific(["rl", "reward-modeling", "prm", "diffusion"]) == ["prm", "diffusion"]
    assert TREE.most_specific(["rl", "grpo", "dpo"]) == ["grpo", "dpo"]
    assert TREE.most_specific(["rl"]) == ["rl"]


def test_an_unknown_parent_is_refused_naming_the_topic() -> None:
    with pytest.raises(
        HierarchyError, match="topic 'grpo' names an unknown parent 'rl-post-trainig'"
    ) as caught:
        Hierarchy({"rl": None, "grpo": "rl-post-trainig"})
    assert caught.value.topic == "grpo"
    assert isinstance(caught.value, PaperwatchError)


def test_a_self_parent_is_refused_naming_the_topic() -> None:
    with pytest.raises(HierarchyError, match="topic 'loop' names itself as its parent"):
        Hierarchy({"loop": "loop"})


@pytest.mark.parametrize(
    ("parents", "message"),
    [
        ({"a": "b", "b": "a"}, "topic 'a' is its own ancestor: 'a' -> 'b' -> 'a'"),
        (
            {"a": "b", "b": "c", "c": "a", "d": None},
            "topic 'a' is its own ancestor: 'a' -> 'b' -> 'c' -> 'a'",
        ),
        # A topic that only leads into a cycle is not on it: the first topic on the cycle is named.
        ({"root": None, "x": "y", "y": "z", "z": "y"}, "topic 'y' is its own ancestor: 'y' -> 'z' -> 'y'"),
    ],
)
def test_a_cycle_is_refused_naming_a_topic_on_it(parents: dict[str, str | None], message: str) -> None:
    with pytest.raises(HierarchyError, match=message):
        Hierarchy(parents)


def test_a_long_chain_is_a_tree() -> None:
    chain: dict[str, str | None] = {"t0": None, **{f"t{i}": f"t{i - 1}" for i in range(1, 300)}}
    tree = Hierarchy(chain)
    assert tree.ancestors("t299")[-1] == "t0"
    assert len(tree.descendants("t0")) == 299


def test_the_tree_is_drawn_parent_first_with_depths() -> None:
    assert TREE.walk() == [
        (0, "rl"),
        (1, "grpo"),
        (1, "reward-modeling"),
        (2, "prm"),
        (1, "dpo"),
        (0, "diffusion"),
    ]
    assert [TREE.depth(k) for k in ("rl", "prm")] == [0, 2] and "prm" in TREE and "nope" not in TREE


def test_stored_topics_key_the_tree_by_id() -> None:
    by_id = Hierarchy({1: None, 2: 1, 3: 2})
    assert by_id.closure([3]) == {1, 2, 3} and by_id.most_specific({1, 2, 3}) == [3]
    with pytest.raises(HierarchyError, match="topic 3 is its own ancestor: 3 -> 4 -> 3"):
        Hierarchy({3: 4, 4: 3})

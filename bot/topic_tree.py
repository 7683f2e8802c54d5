"""The topic tree: parent links checked once, then ancestors, descendants and the matching rule.

A child is a subset of its parent's meaning, so a paper that matches a child matches every ancestor: a topic
matches a paper when its own query or any descendant's query does. The catalog loader, the relevance report
and (later) the service share this one rule, so the figures a maintainer reviews are what users receive.

Pure functions over topic keys (the catalog uses slugs, the topic index stored ids); nothing here parses
queries or touches the store. It sits below both the store (which applies the rule when it rebuilds what
ancestors hold) and bot/topics/ (the catalog, the index, the relevance report).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from bot.errors import PaperwatchError

K = TypeVar("K", bound=Hashable)  # a topic key: a catalog slug, or a stored topic's id


class HierarchyError(PaperwatchError):
    """Parent links that cannot form a tree (unknown parent, self-parent, cycle); `topic` is the offender."""

    def __init__(self, topic: Hashable, problem: str) -> None:
        self.topic = topic
        self.problem = problem  # what is wrong, in words that follow the topic's name
        super().__init__(f"topic {topic!r} {problem}")


@dataclass(frozen=True)
class Hierarchy(Generic[K]):
    """Parent links (topic -> its parent, or None for a root), checked when built; every topic is a key.

    Raises HierarchyError naming the first offending topic (in mapping order) for a parent that is not a
    topic, a topic that is its own parent, or a cycle (listing the topics on it).
    """

    parents: Mapping[K, K | None]
    _children: Mapping[K, tuple[K, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_parents(self.parents)
        children: dict[K, list[K]] = {key: [] for key in self.parents}
        for key, parent in self.parents.items():
            if parent is not None:
                children[parent].append(key)
        object.__setattr__(self, "_children", {key: tuple(kids) for key, kids in children.items()})

    def __contains__(self, key: object) -> bool:
        return key in self.parents

    def parent(self, key: K) -> K | None:
        return self.parents[key]

    def children(self, key: K) -> tuple[K, ...]:
        return self._children[key]

    def ancestors(self, key: K) -> list[K]:
        """Parent first, root last; empty for a root."""
        found: list[K] = []
        parent = self.parents[key]
        while parent is not None:
            found.append(parent)
            parent = self.parents[parent]
        return found

    def descendants(self, key: K) -> list[K]:
        """Every topic below `key`, depth first, children in mapping order."""
        found: list[K] = []
        stack = list(reversed(self._children[key]))
        while stack:
            child = stack.pop()
            found.append(child)
            stack.extend(reversed(self._children[child]))
        return found

    def roots(self) -> list[K]:
        return [key for key, parent in self.parents.items() if parent is None]

    def depth(self, key: K) -> int:
        """0 for a root, 1 for its children, ..."""
        return len(self.ancestors(key))

    def walk(self) -> list[tuple[int, K]]:
        """Every topic as (depth, key), each parent followed by its subtree: the order a tree is drawn in."""
        return [(depth, key) for root in self.roots() for depth, key in self._subtree(root, 0)]

    def _subtree(self, key: K, depth: int) -> Iterable[tuple[int, K]]:
        yield depth, key
        for child in self._children[key]:
            yield from self._subtree(child, depth + 1)

    def closure(self, direct: Iterable[K]) -> set[K]:
        """The topics a paper matches, given those whose own query matched it: each with all its ancestors."""
        matched: set[K] = set()
        for key in direct:
            if key not in matched:
                matched.add(key)
                matched.update(self.ancestors(key))
        return matched

    def most_specific(self, direct: Iterable[K]) -> list[K]:
        """Of the topics whose own query matched, those with no matched descendant (what a card names), in
        mapping order. The same for the closure of those topics, so a caller holding either gets one answer."""
        direct_set = set(direct)
        covered = {ancestor for key in direct_set for ancestor in self.ancestors(key)}
        return [key for key in self.parents if key in direct_set and key not in covered]

    def matches(self, key: K, own_match: Callable[[K], bool]) -> bool:
        """Whether topic `key` matches a paper, given `own_match(topic)`: does that topic's own query match it."""
        return own_match(key) or any(own_match(d) for d in self.descendants(key))


def check_parents(parents: Mapping[K, K | None]) -> None:
    """Raise HierarchyError for the first topic whose parent is unknown or itself, then for a cycle."""
    for key, parent in parents.items():
        if parent is None:
            continue
        if parent == key:
            raise HierarchyError(key, "names itself as its parent")
        if parent not in parents:
            raise HierarchyError(key, f"names an unknown parent {parent!r}")
    for key in parents:
        cycle = _cycle_from(key, parents)
        if cycle:
            path = " -> ".join(repr(k) for k in [*cycle, key])
            raise HierarchyError(key, f"is its own ancestor: {path}")


def _cycle_from(start: K, parents: Mapping[K, K | None]) -> list[K]:
    """The topics from `start` up to where the walk returns to `start`; empty when it never does."""
    path: list[K] = []
    seen: set[K] = set()
    key: K | None = start
    while key is not None and key not in seen:
        path.append(key)
        seen.add(key)
        key = parents[key]
    return path if key == start else []

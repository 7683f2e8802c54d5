"""A server's topics as a tree of names: the paths and "Parent › Child" labels /topics and autocomplete show."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.models import TopicRow, fold_name
from bot.render.limits import CHOICE_NAME_LIMIT
from bot.topic_tree import Hierarchy

PATH_SEPARATOR = " › "


@dataclass(frozen=True)
class TopicTree:
    """The topics a server sees (the catalog and its own) as a tree, children by name under their parent."""

    rows: list[tuple[int, TopicRow]]  # (depth, topic), each parent followed by its subtree

    def path(self, topic_id: int) -> list[str]:
        """The names from the root down to the topic ([] for a topic not in the tree)."""
        by_id = {t.id: t for _, t in self.rows}
        names: list[str] = []
        current = by_id.get(topic_id)
        while current is not None:
            names.append(current.name)
            current = by_id.get(current.parent_id) if current.parent_id is not None else None
        return names[::-1]

    def label(self, topic_id: int, limit: int = CHOICE_NAME_LIMIT) -> str:
        """ "Parent › Child" within `limit` characters: the topic's own name is kept whole, ancestors nearest
        the root give way first."""
        path = self.path(topic_id)
        for start in range(len(path)):
            text = ("…" + PATH_SEPARATOR if start else "") + PATH_SEPARATOR.join(path[start:])
            if len(text) <= limit:
                return text
        return path[-1][: limit - 1] + "…" if path else ""


def topic_tree(topics: Sequence[TopicRow]) -> TopicTree:
    """The tree of these topics; a parent not among them (hidden by a server's topic of the same name) makes
    its children roots."""
    ordered = sorted(topics, key=lambda t: fold_name(t.name))
    ids = {t.id for t in ordered}
    tree = Hierarchy({t.id: t.parent_id if t.parent_id in ids else None for t in ordered})
    by_id = {t.id: t for t in ordered}
    return TopicTree([(depth, by_id[key]) for depth, key in tree.walk()])

"""Fan-out: which of many followed topics does a new paper belong to?

Each topic registers under its index keys (`TopicQuery.index_keys`): words, `cat:<category>` or `id:<id>`
of which every matching paper holds at least one. A paper looks up its own keys (`PaperText.keys`) and is
evaluated only against the topics found there, plus the few topics without keys (a pure prefix or category
prefix query), so the cost grows with the topics a paper could match, not with all topics.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.models import Paper
from bot.topics.query import PaperText, Predicate, TopicQuery


class Matcher:
    """Topic id -> query, with an inverted index from keys to topic ids. Not thread-safe (one event loop)."""

    def __init__(self, topics: Iterable[tuple[int, TopicQuery]] = ()) -> None:
        self._queries: dict[int, TopicQuery] = {}
        self._predicates: dict[int, Predicate] = {}
        self._keys: dict[int, frozenset[str] | None] = {}
        self._index: dict[str, set[int]] = {}
        self._unkeyed: set[int] = set()  # topics evaluated on every paper
        for topic_id, query in topics:
            self.add(topic_id, query)

    def __len__(self) -> int:
        return len(self._queries)

    def __contains__(self, topic_id: object) -> bool:
        return topic_id in self._queries

    def add(self, topic_id: int, query: TopicQuery) -> None:
        """Register a topic; adding an id again replaces its query."""
        self.remove(topic_id)
        keys = query.index_keys()
        self._queries[topic_id] = query
        self._predicates[topic_id] = query.predicate
        self._keys[topic_id] = keys
        if keys is None:
            self._unkeyed.add(topic_id)
            return
        for key in keys:
            self._index.setdefault(key, set()).add(topic_id)

    def remove(self, topic_id: int) -> None:
        """Forget a topic; unknown ids are ignored, so removal is idempotent."""
        if self._queries.pop(topic_id, None) is None:
            return
        del self._predicates[topic_id]
        keys = self._keys.pop(topic_id)
        if keys is None:
            self._unkeyed.discard(topic_id)
            return
        for key in keys:
            ids = self._index[key]
            ids.discard(topic_id)
            if not ids:
                del self._index[key]

    def candidates(self, text: PaperText) -> set[int]:
        """Topics that could match the paper: those under one of its keys, and the unkeyed ones."""
        found = set(self._unkeyed)
        index = self._index
        if len(index) < len(text.keys):  # walk the smaller side
            for key, ids in index.items():
                if key in text.keys:
                    found |= ids
        else:
            for key in text.keys:
                wanting = index.get(key)
                if wanting:
                    found |= wanting
        return found

    def match(self, paper: Paper) -> set[int]:
        """Ids of the topics whose query matches the paper."""
        text = PaperText.of(paper)
        predicates = self._predicates
        return {topic_id for topic_id in self.candidates(text) if predicates[topic_id](text)}

    def match_many(self, papers: Iterable[Paper]) -> dict[str, set[int]]:
        """arxiv_id -> matching topic ids, for papers that match at least one topic."""
        matched: dict[str, set[int]] = {}
        for paper in papers:
            ids = self.match(paper)
            if ids:
                matched.setdefault(paper.arxiv_id, set()).update(ids)
        return matched

"""The curated topic catalog: named, defined arXiv queries that a server can follow by name, in a tree.

The packaged `catalog.toml` is validated as a whole when loaded, so a typo in one topic (or a parent link
that cannot form a tree) fails at start-up with a message naming that topic instead of surfacing later as a
topic that silently never matches.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from bot.errors import ConfigError
from bot.models import TopicRow, fold_name, topic_key
from bot.topic_tree import Hierarchy, HierarchyError
from bot.topics.query import MAX_QUERY_LENGTH, QuerySyntaxError, TopicQuery, parse_query

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# A catalog query is reviewed code, not input from a server: it may be longer than the MAX_QUERY_LENGTH a
# /follow query has (that bound protects the bot from hostile input), so a topic can carry the phrases its field
# uses. 1,500 characters still fit whole, with the topic's figures, in the announcement a /follow posts (a
# Discord message holds 2,000), and in a GET to the arXiv API (a few KB once URL-encoded).
CATALOG_QUERY_LENGTH = 1500
_REQUIRED = ("slug", "name", "description", "definition", "query")
_KNOWN = frozenset((*_REQUIRED, "categories", "parent"))


class CatalogError(ConfigError):
    """The topic catalog is invalid. The message names the file, the topic and the problem."""


@dataclass(frozen=True)
class CatalogTopic:
    slug: str
    name: str
    description: str
    query: TopicQuery
    categories: tuple[str, ...] = ()  # a hint for backfill; matching never filters on it
    parent: str | None = None  # the parent topic's slug: every paper of this topic belongs to it too
    definition: str = ""  # what belongs and what does not, in the catalog's words (description is the gist)


def stored_query(text: str, *, is_catalog: bool) -> TopicQuery:
    """A stored topic's query, parsed again under the bound it was written with: the catalog's, or the one a
    server's own query has (MAX_QUERY_LENGTH)."""
    return parse_query(text, max_length=CATALOG_QUERY_LENGTH if is_catalog else MAX_QUERY_LENGTH)


def catalog_hierarchy(catalog: list[CatalogTopic]) -> Hierarchy[str]:
    """The catalog's tree by slug (see bot.topic_tree for the matching rule)."""
    return Hierarchy({topic.slug: topic.parent for topic in catalog})


def load_catalog(path: Path | None = None) -> list[CatalogTopic]:
    """Load and validate a catalog file (default: the packaged `catalog.toml`), in file order.

    Raises CatalogError on unreadable or invalid TOML, a missing or empty field, a malformed slug,
    a query that does not parse, a slug or name that repeats another topic's (by key: case, spacing and
    punctuation aside, in any script), or a parent that is unknown, the topic itself, or on a cycle.
    """
    source, text = _read(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{source}: not valid TOML: {exc}") from None
    entries = data.get("topic")
    if not isinstance(entries, list) or not entries:
        raise CatalogError(f"{source}: no [[topic]] tables found")
    topics = [_parse_topic(entry, index, source) for index, entry in enumerate(entries, start=1)]
    _check_unique(topics, source)
    _check_tree(topics, source)
    return topics


def find_topic(catalog: list[CatalogTopic], name_or_slug: str) -> CatalogTopic | None:
    """The topic whose name or slug is `name_or_slug` ignoring case and repeated spaces, else the one whose
    name or slug has its key (punctuation aside too)."""
    wanted, key = fold_name(name_or_slug), topic_key(name_or_slug)
    same = (t for t in catalog if wanted in (fold_name(t.slug), fold_name(t.name)))
    close = (t for t in catalog if key in (t.slug, topic_key(t.name)))
    return next(same, None) or next(close, None)


def _read(path: Path | None) -> tuple[str, str]:
    if path is None:
        packaged = resources.files("bot.topics").joinpath("catalog.toml")
        return "packaged catalog.toml", packaged.read_text(encoding="utf-8")
    try:
        return str(path), path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read the topic catalog: {exc}") from None


def _parse_topic(entry: object, index: int, source: str) -> CatalogTopic:
    if not isinstance(entry, dict):
        raise CatalogError(f"{source}: topic #{index} is not a table")
    label = _label(entry, index)

    def fail(problem: str) -> CatalogError:
        return CatalogError(f"{source}: topic {label}: {problem}")

    unknown = sorted(set(entry) - _KNOWN)
    if unknown:
        raise fail(f"unknown field(s) {', '.join(unknown)} (expected {', '.join(sorted(_KNOWN))})")
    fields: dict[str, str] = {}
    for key in _REQUIRED:
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise fail(f"field '{key}' is missing or empty")
        # Multi-line TOML strings are for readability only: collapse their line breaks and indentation.
        fields[key] = " ".join(value.split())
    if not _SLUG.match(fields["slug"]):
        raise fail(f"slug {fields['slug']!r} is not kebab-case (lowercase letters, digits, single hyphens)")
    if len(fields["query"]) > CATALOG_QUERY_LENGTH:
        raise fail(
            f"query has {len(fields['query'])} characters, more than the {CATALOG_QUERY_LENGTH} a catalog query "
            "may have: drop a rare synonym, or split the topic into children"
        )
    try:
        query = parse_query(fields["query"], max_length=CATALOG_QUERY_LENGTH)
    except QuerySyntaxError as exc:
        # The pointer shows the collapsed one-line query, which is what the positions refer to.
        raise fail(f"query does not parse: {exc}\n{exc.pointer()}") from None
    parent = entry.get("parent")
    if parent is not None and (not isinstance(parent, str) or not _SLUG.match(parent)):
        raise fail(
            f"'parent' must be the slug of another catalog topic, e.g. \"rl-post-training\" (got {parent!r})"
        )
    return CatalogTopic(
        slug=fields["slug"],
        name=fields["name"],
        description=fields["description"],
        query=query,
        categories=_categories(entry.get("categories", []), fail),
        parent=parent,
        definition=fields["definition"],
    )


def _categories(value: object, fail: Callable[[str], CatalogError]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise fail("'categories' must be a list of arXiv category names, e.g. [\"cs.LG\"]")
    return tuple(item.strip() for item in value)


def _check_unique(topics: list[CatalogTopic], source: str) -> None:
    # Names and slugs share one namespace of keys because find_topic (and a server's lookups) accept either.
    owners: dict[str, CatalogTopic] = {}
    for topic in topics:
        for key in {topic.slug, topic_key(topic.name)}:
            other = owners.get(key)
            if other is not None:
                raise CatalogError(
                    f"{source}: topic {_describe(topic)} repeats {key!r}, "
                    f"already used by topic {_describe(other)}: slugs and names must be unique"
                )
            owners[key] = topic


def _check_tree(topics: list[CatalogTopic], source: str) -> None:
    try:
        catalog_hierarchy(topics)
    except HierarchyError as exc:
        topic = next(t for t in topics if t.slug == exc.topic)
        raise CatalogError(
            f"{source}: topic {_describe(topic)} {exc.problem} (a parent is another catalog topic's slug, "
            "and no topic may be its own ancestor)"
        ) from None


def _label(entry: dict[str, Any], index: int) -> str:
    for key in ("slug", "name"):
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            return f"#{index} ({value.strip()!r})"
    return f"#{index}"


def _describe(topic: CatalogTopic) -> str:
    return f"{topic.name!r} (slug {topic.slug!r})"


def check_catalog_tree(catalog: Sequence[CatalogTopic], earlier: Sequence[TopicRow]) -> None:
    """Check the catalog's tree by slug as it will be once this list is stored: its topics' parents, and those
    of catalog topics stored by earlier starts and left out of it. Raises CatalogError naming a topic whose
    parent is no catalog topic, is itself, or makes a cycle."""
    slugs = {row.id: row.slug for row in earlier}
    parents = {row.slug: slugs.get(row.parent_id) if row.parent_id is not None else None for row in earlier}
    names = {row.slug: row.name for row in earlier}
    for topic in catalog:
        parents[topic.slug] = topic.parent
        names[topic.slug] = topic.name
    try:
        Hierarchy(parents)
    except HierarchyError as exc:
        slug = str(exc.topic)
        raise CatalogError(
            f"topic {names[slug]!r} (slug {slug!r}) {exc.problem}: a parent is another catalog topic's slug, and "
            "no topic may be its own ancestor"
        ) from None

"""What a delivery's card names: of the topics its paper matched, the most specific at or below a followed one
(both engines name them with `name_card_topics` once their reads are done; SQLite's reads are here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from bot.models import CATALOG_GUILD, PendingDelivery, TopicRow
from bot.store.database import Database
from bot.store.topics import _topic
from bot.topic_tree import Hierarchy


async def with_card_topics(db: Database, items: list[PendingDelivery]) -> list[PendingDelivery]:
    """The deliveries with the topics their cards name: of the topics the paper matched (catalog and the
    server's own), the most specific ones at or below a followed topic the delivery stands for. A channel
    following RL Post-Training gets "On-Policy Distillation" on a paper of that child. A delivery whose paper
    matches none of them any more (a query changed since) names its followed topics."""
    if not items:
        return items
    ids = [d.id for d in items]
    marks = ",".join("?" * len(ids))
    followed: dict[int, set[int]] = {}
    for row in await db.fetchall(
        f"SELECT delivery_id, topic_id FROM delivery_topics WHERE delivery_id IN ({marks})", ids
    ):
        followed.setdefault(row[0], set()).add(row[1])
    arxiv_ids = sorted({d.paper.arxiv_id for d in items})
    matched: dict[str, set[int]] = {}
    suggested: dict[str, set[int]] = {}
    for row in await db.fetchall(
        "SELECT p.arxiv_id, m.topic_id, m.kind FROM topic_matches m JOIN papers p ON p.pk = m.paper_pk"
        f" WHERE p.arxiv_id IN ({','.join('?' * len(arxiv_ids))})",
        arxiv_ids,
    ):
        (matched if row[2] == "exact" else suggested).setdefault(row[0], set()).add(row[1])
    guilds = sorted({CATALOG_GUILD, *(d.guild_id for d in items)})
    rows = [
        _topic(r)
        for r in await db.fetchall(
            f"SELECT * FROM topics WHERE guild_id IN ({','.join('?' * len(guilds))})", guilds
        )
    ]
    return name_card_topics(items, followed, matched, suggested, rows)


def name_card_topics(
    items: list[PendingDelivery],
    followed: Mapping[int, set[int]],
    matched: Mapping[str, set[int]],
    suggested: Mapping[str, set[int]],
    rows: Sequence[TopicRow],
) -> list[PendingDelivery]:
    """`with_card_topics` once read (both engines): each delivery's followed topic ids, each paper's exact and
    suggested topic ids, and the topics of the catalog and the deliveries' servers."""
    trees: dict[int, tuple[Hierarchy[int], dict[int, str]]] = {}
    named = []
    for item in items:
        if item.guild_id not in trees:  # a server sees the catalog and its own topics
            seen = [t for t in rows if t.guild_id in (CATALOG_GUILD, item.guild_id)]
            trees[item.guild_id] = (
                Hierarchy({t.id: t.parent_id for t in seen}),
                {t.id: t.name for t in seen},
            )
        tree, names = trees[item.guild_id]
        wanted = followed.get(item.id, set())
        below = [
            t
            for t in matched.get(item.paper.arxiv_id, set())
            if t in tree and (t in wanted or wanted.intersection(tree.ancestors(t)))
        ]
        shown = tree.most_specific(below) or [t for t in wanted if t in names]
        # No exact match at or below a followed topic: the paper came through a follow that asked for the
        # learned scorer's suggestions, and its card says so.
        by_scorer = not below and bool(wanted & suggested.get(item.paper.arxiv_id, set()))
        named.append(replace(item, topics=tuple(sorted(names[t] for t in shown)), suggested=by_scorer))
    return named
